#include "sys/os/signal_relay.hpp"

#include <cerrno>

#include <fcntl.h>
#include <unistd.h>

namespace ezpz::sys {
namespace {

int g_pipe[2] = {-1, -1};

/// One record a signal: its number and, when a process sent it (kill, sigqueue: si_code <= 0), that
/// process's pid, else 0. A write of 8 bytes to a pipe is atomic.
struct Record {
  int signo;
  int sender;
};

extern "C" void relay_signal(int signo, siginfo_t* info, void* /*context*/) {
  const int saved = errno;
  const Record r{signo, info != nullptr && info->si_code <= 0 ? static_cast<int>(info->si_pid) : 0};
  [[maybe_unused]] auto n = ::write(g_pipe[1], &r, sizeof(r));
  errno = saved;
}

}  // namespace

const std::vector<int>& SignalRelay::signals() {
  static const std::vector<int> list = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGCHLD};
  return list;
}

SignalRelay::SignalRelay() {
  sigemptyset(&ignored_);
  if (::pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    g_pipe[0] = g_pipe[1] = -1;
    return;
  }
  for (int signo : signals()) {
    struct sigaction sa {};
    sa.sa_sigaction = relay_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO | SA_RESTART | (signo == SIGCHLD ? SA_NOCLDSTOP : 0);
    struct sigaction old {};
    ::sigaction(signo, &sa, &old);
    saved_.push_back(old);
    if (old.sa_handler == SIG_IGN && signo != SIGCHLD) {
      sigaddset(&ignored_, signo);
    }
  }
  ::signal(SIGPIPE, SIG_IGN);  // a closed stdout must not kill the supervisor
}

SignalRelay::~SignalRelay() {
  for (std::size_t i = 0; i < saved_.size(); ++i) {
    ::sigaction(signals()[i], &saved_[i], nullptr);
  }
  if (g_pipe[0] >= 0) {
    ::close(g_pipe[0]);
    ::close(g_pipe[1]);
  }
  g_pipe[0] = g_pipe[1] = -1;
}

int SignalRelay::fd() const {
  return g_pipe[0];
}

std::vector<Received> SignalRelay::drain_senders() {
  std::vector<Received> out;
  if (g_pipe[0] < 0) {
    return out;
  }
  Record buf[16];
  while (true) {
    auto n = ::read(g_pipe[0], buf, sizeof(buf));
    if (n <= 0) {
      break;
    }
    for (std::size_t i = 0; i < static_cast<std::size_t>(n) / sizeof(Record); ++i) {
      out.push_back({buf[i].signo, buf[i].sender});
    }
  }
  return out;
}

std::vector<int> SignalRelay::drain() {
  std::vector<int> out;
  for (const auto& r : drain_senders()) {
    out.push_back(r.signo);
  }
  return out;
}

}  // namespace ezpz::sys
