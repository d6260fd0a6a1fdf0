#include "sys/os/signal_relay.hpp"

#include <cerrno>

#include <fcntl.h>
#include <unistd.h>

namespace ezpz::sys {
namespace {

/// The write end of the current relay's pipe, for the handler (-1: none).
volatile sig_atomic_t g_write_end = -1;

/// One record a signal: its number and, when a process sent it (kill, sigqueue: si_code <= 0), that
/// process's pid, else 0; and sigqueue's value. A write of 12 bytes to a pipe is atomic.
struct Record {
  int signo;
  int sender;
  int value;
};

extern "C" void relay_signal(int signo, siginfo_t* info, void* /*context*/) {
  const int saved = errno;
  const Record r{signo, info != nullptr && info->si_code <= 0 ? static_cast<int>(info->si_pid) : 0,
                 info != nullptr && info->si_code == SI_QUEUE ? info->si_value.sival_int : 0};
  [[maybe_unused]] auto n = ::write(static_cast<int>(g_write_end), &r, sizeof(r));
  errno = saved;
}

}  // namespace

const std::vector<int>& SignalRelay::signals() {
  static const std::vector<int> list = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGCHLD};
  return list;
}

SignalRelay::SignalRelay() {
  sigemptyset(&ignored_);
  if (!pipe_.open(O_NONBLOCK)) {
    return;
  }
  g_write_end = pipe_.write_end();
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
  g_write_end = -1;  // the handlers are gone; pipe_ closes after this
}

int SignalRelay::fd() const {
  return pipe_.read_end();
}

std::vector<Received> SignalRelay::drain_senders() {
  std::vector<Received> out;
  if (pipe_.read_end() < 0) {
    return out;
  }
  Record buf[16];
  while (true) {
    auto n = ::read(pipe_.read_end(), buf, sizeof(buf));
    if (n <= 0) {
      break;
    }
    for (std::size_t i = 0; i < static_cast<std::size_t>(n) / sizeof(Record); ++i) {
      out.push_back({buf[i].signo, buf[i].sender, buf[i].value});
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
