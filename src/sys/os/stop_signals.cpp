#include "sys/os/stop_signals.hpp"

#include <algorithm>

namespace ezpz::sys {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_stop_signal{0};  ///< the first signal that asked to stop
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void request_stop(int signo) {
  int none = 0;
  g_stop_signal.compare_exchange_strong(none, signo);
  g_stop.store(true);
}

}  // namespace

void StopSignals::arm() {
  if (!saved_.empty()) {
    return;
  }
  g_stop.store(false);
  g_stop_signal.store(0);
  for (int signo : kStopSignals) {
    struct sigaction sa {};
    sa.sa_handler = request_stop;
    sigemptyset(&sa.sa_mask);
    struct sigaction old {};
    ::sigaction(signo, &sa, &old);
    saved_.push_back(old);
  }
}

StopSignals::~StopSignals() {
  for (std::size_t i = 0; i < saved_.size(); ++i) {
    ::sigaction(kStopSignals[i], &saved_[i], nullptr);
  }
}

const std::atomic<bool>& StopSignals::flag() const {
  return g_stop;
}

int StopSignals::signal() const {
  return g_stop.load() ? std::max(1, g_stop_signal.load()) : 0;
}

}  // namespace ezpz::sys
