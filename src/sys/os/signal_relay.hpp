// Turns SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 and SIGCHLD into records on a pipe (the
// self-pipe trick), so one poll() loop handles signals, output and deadlines.
#pragma once

#include <csignal>
#include <vector>

#include "sys/os/fd_io.hpp"

namespace ezpz::sys {

/// A signal and the process that sent it (0: the kernel, e.g. a terminal's Ctrl-C).
struct Received {
  int signo = 0;
  int sender = 0;
  int value = 0;  ///< what a sigqueue (SI_QUEUE) sender attached (core::kKillMark: ezpz kill); else 0
};

class SignalRelay {
 public:
  SignalRelay();
  ~SignalRelay();
  SignalRelay(const SignalRelay&) = delete;
  SignalRelay& operator=(const SignalRelay&) = delete;

  /// The pipe to poll; -1 when it could not be made (then nothing is relayed).
  [[nodiscard]] int fd() const;
  /// Signals received since the last call, in order.
  std::vector<int> drain();
  /// The same, with their senders.
  std::vector<Received> drain_senders();

  /// Signals that were ignored (SIG_IGN) before this relay took them over (nohup): children
  /// keep ignoring them.
  [[nodiscard]] const sigset_t& inherited_ignored() const { return ignored_; }

  /// The signals relayed (children get their default dispositions back before exec).
  static const std::vector<int>& signals();

 private:
  OwnedPipe pipe_;  ///< the handler writes to its write end, drain reads the other
  std::vector<struct sigaction> saved_;
  sigset_t ignored_{};
};

}  // namespace ezpz::sys
