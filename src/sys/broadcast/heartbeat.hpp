// A relay's sign of life: after the stream its parent only reads, so a relay that stops while
// it finishes (SIGSTOP, a frozen link) would otherwise hold the parent's collect forever. The
// parent drops a child that says nothing, not even this line, for its stall timeout.
// The line goes out with one write(2) on the descriptor and nothing else: no stdio, no
// allocation, so a fork from another thread meanwhile (a relay starting its children) never
// inherits a lock this thread held (under ASan, a heartbeat on std::cout while the relay forked
// left some forked ssh transports hung).
#pragma once

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <ostream>
#include <stop_token>
#include <thread>

#include <unistd.h>

#include "core/yeet/outcome.hpp"
#include "core/yeet/stream_wire.hpp"

namespace ezpz::sys {

class Heartbeat {
 public:
  /// Writes core::kAliveLine to `fd` every `every` until destroyed; `fd_mutex` guards every
  /// line written to `fd` (hold it while writing and flushing a result line), so a heartbeat
  /// never lands inside one.
  Heartbeat(int fd, std::mutex& fd_mutex, std::chrono::milliseconds every = std::chrono::seconds(1))
      : thread_([fd, &fd_mutex, every](const std::stop_token& stop) {
          static constexpr char kLine[] = "EZPZ-ALIVE\n";
          static_assert(std::string_view(kLine, sizeof(kLine) - 2) == core::kAliveLine);
          std::mutex m;
          std::condition_variable_any wake;
          std::unique_lock lock(m);
          while (true) {
            wake.wait_for(lock, stop, every, [] { return false; });
            if (stop.stop_requested()) {
              return;
            }
            const std::lock_guard guard(fd_mutex);
            while (::write(fd, kLine, sizeof(kLine) - 1) < 0 && errno == EINTR) {
            }
          }
        }) {}

 private:
  std::jthread thread_;
};

/// Result lines on our stdout (`out` is std::cout), one at a time, with a heartbeat between
/// them for as long as this lives: what a relay prints after its stream, and a peer's sender.
class ResultLines {
 public:
  explicit ResultLines(std::ostream& out) : out_(out) {}
  void operator()(const core::NodeResult& r) {
    const std::lock_guard lock(mutex_);
    out_ << core::encode_result(r) << std::endl;
  }

 private:
  std::ostream& out_;
  std::mutex mutex_;
  Heartbeat alive_{STDOUT_FILENO, mutex_};  // after mutex_: started after it, stopped before it
};

}  // namespace ezpz::sys
