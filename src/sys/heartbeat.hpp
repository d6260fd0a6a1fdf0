// A relay's sign of life: after the stream its parent only reads, so a relay that stops while
// it finishes (SIGSTOP, a frozen link) would otherwise hold the parent's collect forever. The
// parent drops a child that says nothing, not even this line, for its stall timeout. It runs
// from the relay's start, so one still busy after its parent finished sending (feeding a slow
// subtree what the buffers held) keeps saying it is alive.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <ostream>
#include <stop_token>
#include <thread>

#include "core/broadcast.hpp"

namespace ezpz::sys {

class Heartbeat {
 public:
  /// Writes core::kAliveLine to `out` every `every` until destroyed; `out_mutex` guards every
  /// line written to `out`, so a heartbeat never lands inside a result line.
  Heartbeat(std::ostream& out, std::mutex& out_mutex, std::chrono::milliseconds every = std::chrono::seconds(1))
      : thread_([&out, &out_mutex, every](const std::stop_token& stop) {
          std::mutex m;
          std::condition_variable_any wake;
          std::unique_lock lock(m);
          while (true) {
            wake.wait_for(lock, stop, every, [] { return false; });
            if (stop.stop_requested()) {
              return;
            }
            std::lock_guard guard(out_mutex);
            out << core::kAliveLine << std::endl;
          }
        }) {}

 private:
  std::jthread thread_;
};

}  // namespace ezpz::sys
