// SIGINT, SIGTERM and SIGHUP turned into a stop flag from the first real work on, so a copy or
// a broadcast ends cleanly and its work can be discarded; the old handlers come back at the end.
#pragma once

#include <atomic>
#include <csignal>
#include <vector>

namespace ezpz::sys {

class StopSignals {
 public:
  StopSignals() = default;
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  /// Install the handlers (once) and clear the flag.
  void arm();
  /// The flag the handlers set (read by loops that must stop).
  [[nodiscard]] const std::atomic<bool>& flag() const;
  /// The first signal that asked to stop; 0 when none did.
  [[nodiscard]] int signal() const;

 private:
  std::vector<struct sigaction> saved_;
};

}  // namespace ezpz::sys
