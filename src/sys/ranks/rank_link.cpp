// The shim's end of the rank channel.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>

#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "sys/agents/net.hpp"
#include "sys/agents/secure_channel.hpp"
#include "sys/ranks/rank_channels.hpp"

namespace ezpz::sys {
namespace {

class Link final : public core::RankLink {
 public:
  Link(SecureChannel ch, double kill_after, bool answered)
      : ch_(std::move(ch)), kill_after_(kill_after), answered_(answered) {}

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
        killed_ = true;
        return Heard::kill;
      }
      if (type == 'T' && stop_signal_ == 0) {
        stop_signal_ = std::max(1, std::atoi(data.c_str()));
        return Heard::stop;  // what follows stays in the channel for the next look
      }
      if (type == 'R') {
        released_ = true;
      }
    }
    return got == SecureChannel::Got::closed || got == SecureChannel::Got::forged ? Heard::gone : Heard::nothing;
  }

  [[nodiscard]] double kill_after() const override { return kill_after_; }
  [[nodiscard]] int stop_signal() const override { return stop_signal_; }

  void await_release(double seconds, bool ended_well) override {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    const pid_t parent = ::getppid();
    while (true) {
      const auto heard = hear();  // a stop already here holds this shim, whatever its rank's end
      if (heard == Heard::stop) {
        continue;  // what came with the stop (its release) is in the channel: looked at now
      }
      const bool well = ended_well && stop_signal_ == 0;
      if (released_ || killed_ || (stop_signal_ == 0 && !answered_) || (well && all_acked())) {
        return;  // (the hub has all of a rank that ended well: a stop crossing it finds the report read)
      }
      if (heard == Heard::gone || ::getppid() != parent) {
        return;  // ezpz or the launcher is gone: nobody to wait for
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        return;
      }
      // (the hub's ack wakes nobody: looked for every 2 ms while its answer is awaited)
      pollfd p{ch_.fd(), POLLIN, 0};
      (void)::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), well ? 2 : 250)));
    }
  }

 private:
  /// Every byte this shim sent is acknowledged by the hub's node (which acks at once: it set
  /// TCP_QUICKACK): a reset at its close (a stop that came after, unread) loses nothing, for
  /// the hub reads what came before the reset. Over a network the hub's answer comes first.
  [[nodiscard]] bool all_acked() const {
    int unacked = 0;
    return ::ioctl(ch_.fd(), SIOCOUTQ, &unacked) == 0 && unacked == 0;
  }

  SecureChannel ch_;
  double kill_after_;
  bool answered_;          ///< the hub answers the end report (it stops ranks itself)
  int stop_signal_ = 0;    ///< the hub's stop, once heard
  bool released_ = false;  ///< the hub let the shim end
  bool killed_ = false;
};

/// Begun: the connection made or being made, the hello sent if it could be.
class Pending final : public core::PendingRankLink {
 public:
  Pending(SecureChannel::Dialing dialing, std::string address, std::string hello)
      : dialing_(std::move(dialing)), address_(std::move(address)), hello_(std::move(hello)) {}

  std::unique_ptr<core::RankLink> finish(int timeout_ms, std::string& why) override {
    if (const int err = wait_connected(dialing_.fd(), timeout_ms); err != 0) {
      why = connect_error(address_, err);
      return nullptr;
    }
    auto ch = dialing_.finish(timeout_ms, why);
    if (!ch || !ch->send('H', hello_)) {
      why = why.empty() ? "the hub closed the connection" : why;
      return nullptr;
    }
    // The hub's answer (the launch's grace) is read here, before any output: a socket closed
    // with bytes of the hub's unread is reset, and what this shim had not yet sent is lost with
    // it (a rank's last lines, its end). A stop may follow it at once (a shim that calls
    // while the job is being stopped): it stays in the socket, where the shim's poll sees it.
    char type = 0;
    std::string data;
    if (!ch->await_one(type, data, timeout_ms) || type != 'A') {
      why = "the hub did not answer";
      return nullptr;
    }
    char* rest = nullptr;
    const double grace = std::strtod(data.c_str(), &rest);
    return std::make_unique<Link>(std::move(*ch), std::max(0.0, grace), std::string_view(rest) == " stops");
  }

 private:
  SecureChannel::Dialing dialing_;
  std::string address_;
  std::string hello_;  ///< "RANK HOST"
};

}  // namespace

std::unique_ptr<core::PendingRankLink> SecureRankChannels::begin_hub(const core::Env& env, int rank,
                                                                     const std::string& host, std::string& why) {
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
  auto fd = begin_connect(*address, why);
  if (!fd.valid()) {
    return nullptr;
  }
  // On this node the connection is up at once (and a refusal known): the hello goes now.
  const int err = wait_connected(fd.get(), 0);
  if (err != 0 && err != ETIMEDOUT) {
    why = connect_error(*address, err);
    return nullptr;
  }
  SecureChannel::Dialing dialing(std::move(fd), *secret, SecureChannel::Sealing::encrypt);
  if (!dialing.ok()) {
    why = "no random bytes";
    return nullptr;
  }
  if (err == 0) {
    dialing.send_hello_now();
  }
  return std::make_unique<Pending>(std::move(dialing), *address, std::to_string(rank) + " " + host);
}

}  // namespace ezpz::sys
