// One yeet at a time to a destination on a node: a lock file beside it (<dst>.ezpz-lock), the
// user's own, held (flock) from before the work directory is made until the process ends, and
// removed by its holder (or by the watcher, after a SIGKILL).
#pragma once

#include <atomic>
#include <string>

#include "core/base/expected.hpp"
#include "sys/os/fd_io.hpp"

namespace ezpz::sys {

/// `<destination>.ezpz-lock`.
[[nodiscard]] std::string lock_path(const std::string& destination);

class DestinationLock {
 public:
  DestinationLock() = default;
  DestinationLock(const DestinationLock&) = delete;
  DestinationLock& operator=(const DestinationLock&) = delete;
  ~DestinationLock() { release(); }

  /// Take the lock of `destination`, waiting (a note on stderr, once) while another yeet holds
  /// it, until `stop` is set. Refused when another user owns the lock file (she could hold it
  /// for ever: the error names her) or it is not a regular file.
  [[nodiscard]] Expected<void> acquire(const std::string& destination, const std::atomic<bool>& stop);
  /// Remove the lock file and let go (also at destruction).
  void release();

 private:
  std::string path_;
  OwnedFd fd_;
};

/// The lock file of `destination` removed when it is this user's and no one holds it (the
/// watcher, after its yeet was killed).
void remove_stale_lock(const std::string& destination);

}  // namespace ezpz::sys
