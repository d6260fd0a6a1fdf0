#include "sys/signal_relay.hpp"

#include <cerrno>

#include <fcntl.h>
#include <unistd.h>

namespace ezpz::sys {
namespace {

int g_pipe[2] = {-1, -1};

extern "C" void relay_signal(int signo) {
  const int saved = errno;
  auto byte = static_cast<unsigned char>(signo);
  [[maybe_unused]] auto n = ::write(g_pipe[1], &byte, 1);
  errno = saved;
}

}  // namespace

const std::vector<int>& SignalRelay::signals() {
  static const std::vector<int> list = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGCHLD};
  return list;
}

SignalRelay::SignalRelay() {
  if (::pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    g_pipe[0] = g_pipe[1] = -1;
    return;
  }
  for (int signo : signals()) {
    struct sigaction sa {};
    sa.sa_handler = relay_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | (signo == SIGCHLD ? SA_NOCLDSTOP : 0);
    struct sigaction old {};
    ::sigaction(signo, &sa, &old);
    saved_.push_back(old);
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

std::vector<int> SignalRelay::drain() {
  std::vector<int> out;
  unsigned char buf[64];
  while (true) {
    auto n = ::read(g_pipe[0], buf, sizeof(buf));
    if (n <= 0) {
      break;
    }
    out.insert(out.end(), buf, buf + n);
  }
  return out;
}

}  // namespace ezpz::sys
