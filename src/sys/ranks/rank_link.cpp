// The shim's end of the rank channel.
#include <algorithm>
#include <cstdlib>

#include "sys/agents/net.hpp"
#include "sys/agents/secure_channel.hpp"
#include "sys/ranks/rank_channels.hpp"

namespace ezpz::sys {
namespace {

class Link final : public core::RankLink {
 public:
  Link(SecureChannel ch, double kill_after) : ch_(std::move(ch)), kill_after_(kill_after) {}

  bool send_output(int stream, std::string_view bytes) override {
    while (!bytes.empty()) {
      const auto piece = bytes.substr(0, kMaxRecord);
      if (!ch_.send(stream == 2 ? 'E' : 'O', piece)) {
        return false;
      }
      bytes.remove_prefix(piece.size());
    }
    return true;
  }

  bool send_progress(int stream, std::string_view last_line) override {
    return ch_.send(stream == 2 ? 'e' : 'o', last_line);
  }

  bool send_exit(const core::RankExit& exit) override { return ch_.send('X', core::exit_report_json(exit)); }

  bool send_alive() override { return ch_.send('A', ""); }

  [[nodiscard]] int fd() const override { return ch_.fd(); }

  Heard hear() override {
    const auto got = ch_.fill();
    char type = 0;
    std::string data;
    while (ch_.next(type, data) == SecureChannel::Got::record) {
      if (type == 'K') {
        return Heard::kill;
      }
    }
    return got == SecureChannel::Got::closed || got == SecureChannel::Got::forged ? Heard::gone : Heard::nothing;
  }

  [[nodiscard]] double kill_after() const override { return kill_after_; }

 private:
  SecureChannel ch_;
  double kill_after_;
};

}  // namespace

std::unique_ptr<core::RankLink> SecureRankChannels::connect_hub(const core::Env& env, int rank, const std::string& host,
                                                                int timeout_ms, std::string& why) {
  const auto address = env.get(core::kHubVar);
  const auto key = env.get(core::kHubKeyVar);
  if (!address || !key) {
    why.clear();  // none planned (a line run by hand, --no-rank-env's launch): not a failure
    return nullptr;
  }
  const auto secret = secret_from_hex(*key);
  if (!secret) {
    why = std::string(core::kHubKeyVar) + " is not a secret ezpz made";
    return nullptr;
  }
  auto fd = connect_to(*address, timeout_ms, why);
  if (!fd.valid()) {
    return nullptr;
  }
  auto ch = SecureChannel::open(std::move(fd), SecureChannel::Role::client, *secret, true, timeout_ms, why);
  if (!ch || !ch->send('H', std::to_string(rank) + " " + host)) {
    why = why.empty() ? "the hub closed the connection" : why;
    return nullptr;
  }
  char type = 0;
  std::string data;
  if (!ch->await(type, data, timeout_ms) || type != 'A') {
    why = "the hub did not answer";
    return nullptr;
  }
  const double grace = std::max(0.0, std::strtod(data.c_str(), nullptr));
  return std::make_unique<Link>(std::move(*ch), grace);
}

}  // namespace ezpz::sys
