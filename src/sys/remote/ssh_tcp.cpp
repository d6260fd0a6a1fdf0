#include "sys/remote/ssh_tcp.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include <arpa/inet.h>
#include <poll.h>
#include <unistd.h>

#include "core/base/log.hpp"
#include "core/base/strings.hpp"
#include "core/reach/agents.hpp"
#include "sys/agents/exec_words.hpp"
#include "sys/agents/net.hpp"
#include "sys/agents/session.hpp"

namespace ezpz::sys {
namespace {

using Clock = std::chrono::steady_clock;

/// How long the node half waits for the local half's connection or its decline.
constexpr auto kAwait = std::chrono::seconds(20);

/// The IPv4 address sshd took this session on (SSH_CONNECTION's third word), or "" (every one).
std::string session_address() {
  const char* v = std::getenv("SSH_CONNECTION");
  const auto words = core::split(v != nullptr ? v : "", ' ');
  const std::string server = words.size() == 4 ? std::string(words[2]) : std::string();
  in_addr a{};
  return ::inet_pton(AF_INET, server.c_str(), &a) == 1 ? server : std::string();
}

enum class Answer { connected, decline, gone };

/// One byte of the decline line from stdin (the SSH channel): the answer once the line is whole.
std::optional<Answer> read_decline(std::string& line) {
  char c = 0;
  const auto n = ::read(0, &c, 1);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
    return std::nullopt;
  }
  if (n <= 0 || line.size() >= kTcpDecline.size()) {
    return Answer::gone;
  }
  line += c;
  if (c != '\n') {
    return std::nullopt;
  }
  return line == kTcpDecline ? Answer::decline : Answer::gone;
}

/// Wait for the local half: a connection that proves `secret` (`ch` set), a decline on stdin,
/// or nothing (stdin ended, or kAwait passed). A connection that fails the handshake is
/// dropped and the wait goes on.
Answer await_client(const Listener& l, const Secret& secret, std::optional<SecureChannel>& ch) {
  const auto until = Clock::now() + kAwait;
  std::string line;
  while (Clock::now() < until) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    pollfd fds[2] = {{l.fd.get(), POLLIN, 0}, {0, POLLIN, 0}};
    if (::poll(fds, 2, static_cast<int>(left) + 1) < 0 && errno != EINTR) {
      return Answer::gone;
    }
    if (fds[0].revents != 0) {
      if (auto fd = accept_one(l.fd.get()); fd.valid()) {
        std::string why;
        ch = SecureChannel::open(std::move(fd), SecureChannel::Role::server, secret, SecureChannel::Sealing::encrypt,
                                 5000, why);
        if (ch) {
          return Answer::connected;
        }
      }
    }
    if (fds[1].revents != 0) {
      if (const auto answer = read_decline(line)) {
        return *answer;
      }
    }
  }
  return Answer::gone;
}

/// Run `args` here, over the SSH channel (the decline, or no port to offer).
int run_in_place(const std::vector<std::string>& args) {
  const OwnedFd self = open_self_owned();
  auto words = self_words(args);  // as a relay started through the offer shows in ps
  auto argv = pointers(words);
  ::signal(SIGPIPE, SIG_DFL);
  if (self.valid()) {
    exec_self(self.get(), argv.data());
  }
  log::line("ezpz __ssh-tcp: cannot start ezpz again on this node");
  return 127;
}

}  // namespace

std::optional<TcpOffer> parse_tcp_offer(std::string_view line) {
  if (line.substr(0, kTcpOffer.size()) != kTcpOffer) {
    return std::nullopt;
  }
  const auto words = core::split(line.substr(kTcpOffer.size()), ' ');
  const auto port = words.size() == 2 ? core::parse_positive_int(words[0]) : std::nullopt;
  const auto secret = words.size() == 2 ? secret_from_hex(words[1]) : std::nullopt;
  if (!secret || (words[0] != "0" && (!port || *port > 65535))) {
    return std::nullopt;
  }
  return TcpOffer{port.value_or(0), *secret};
}

int ssh_tcp_main(const std::vector<std::string>& args) {
  if (!core::agent_may_run(args)) {
    log::line("ezpz __ssh-tcp: internal use (ARGS: a relay's, a sender's, a node half's)");
    return 2;
  }
  ::signal(SIGPIPE, SIG_IGN);  // a closed socket is an error return, not a death
  std::string why;
  const auto secret = new_secret();
  const auto listener = secret ? listen_on(session_address(), why) : std::nullopt;
  const auto offer = std::string(kTcpOffer) + (listener ? std::to_string(listener->port) : "0") + " " +
                     secret_hex(secret.value_or(Secret{})) + "\n";
  if (!write_all(1, offer.data(), offer.size())) {
    return 255;
  }
  std::optional<SecureChannel> ch;
  const auto answer = listener ? await_client(*listener, *secret, ch) : Answer::decline;
  if (answer == Answer::connected) {
    return serve_command(*ch, args);
  }
  return answer == Answer::decline ? run_in_place(args) : 255;
}

}  // namespace ezpz::sys
