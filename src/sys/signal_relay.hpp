// Turns SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 and SIGCHLD into bytes on a pipe
// (the self-pipe trick), so one poll() loop handles signals, output and deadlines.
#pragma once

#include <csignal>
#include <vector>

namespace ezpz::sys {

class SignalRelay {
 public:
  SignalRelay();
  ~SignalRelay();
  SignalRelay(const SignalRelay&) = delete;
  SignalRelay& operator=(const SignalRelay&) = delete;

  [[nodiscard]] int fd() const;
  /// Signals received since the last call, in order.
  std::vector<int> drain();

  /// The signals relayed (children get their default dispositions back before exec).
  static const std::vector<int>& signals();

 private:
  std::vector<struct sigaction> saved_;
};

}  // namespace ezpz::sys
