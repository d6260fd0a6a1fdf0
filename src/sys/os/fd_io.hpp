// Whole writes and reads on file descriptors, retrying on EINTR and short counts.
#pragma once

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/base/expected.hpp"

namespace ezpz::sys {

/// Write all `size` bytes; false on an error (errno says which) or a closed pipe.
inline bool write_all(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const auto n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

/// Write what the non-blocking `fd` takes now from the front of `held`; false when its reader is
/// gone (true when it is merely full).
inline bool flush_some(int fd, std::string& held) {
  while (!held.empty()) {
    const auto n = ::write(fd, held.data(), held.size());
    if (n > 0) {
      held.erase(0, static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return n < 0 && errno == EAGAIN;
    }
  }
  return true;
}

/// Let the pipe of `fd` hold 1 MiB (the most an unprivileged process may ask by default), not
/// 64 KiB: a stream through it wakes its reader and writer a sixteenth as often.
inline void widen_pipe(int fd) {
  (void)::fcntl(fd, F_SETPIPE_SZ, 1 << 20);
}

/// Bytes waiting for a non-blocking descriptor, written from the front without moving the rest
/// each time: a 4 MB backlog written 64 KB at a time (a pipe's size) cost 64 times its size in
/// memmove as a string erased from the front.
class ByteQueue {
 public:
  void append(std::string_view s) {
    if (head_ > 0 && head_ >= data_.size() / 2) {  // the rest moves once, to a front half free
      data_.erase(0, head_);
      head_ = 0;
    }
    data_.append(s);
  }
  [[nodiscard]] std::size_t size() const { return data_.size() - head_; }
  [[nodiscard]] bool empty() const { return size() == 0; }
  [[nodiscard]] std::string_view view() const { return std::string_view(data_).substr(head_); }
  void clear() {
    data_.clear();
    head_ = 0;
  }
  /// Write what the non-blocking `fd` takes now; false when its reader is gone (true when it is
  /// merely full).
  bool flush_to(int fd) {
    while (!empty()) {
      const auto n = ::write(fd, data_.data() + head_, size());
      if (n > 0) {
        head_ += static_cast<std::size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        return n < 0 && errno == EAGAIN;
      }
    }
    clear();
    return true;
  }

 private:
  std::string data_;
  std::size_t head_ = 0;
};

/// In a forked child started `gated`: wait for the one byte on stdin that opens its gate; false
/// when the gate was closed unopened (the child then ends, having started nothing).
/// Async-signal-safe.
inline bool wait_at_gate() {
  char gate = 0;
  ssize_t got;
  while ((got = ::read(0, &gate, 1)) < 0 && errno == EINTR) {
  }
  return got == 1;
}

/// A descriptor closed with its owner unless released.
class OwnedFd {
 public:
  OwnedFd() = default;
  explicit OwnedFd(int fd) : fd_(fd) {}
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  OwnedFd(OwnedFd&& other) noexcept : fd_(other.release()) {}
  OwnedFd& operator=(OwnedFd&& other) noexcept {
    if (this != &other) {
      reset(other.release());
    }
    return *this;
  }
  ~OwnedFd() { reset(); }
  [[nodiscard]] int get() const { return fd_; }
  [[nodiscard]] bool valid() const { return fd_ >= 0; }
  /// The descriptor, now the caller's.
  [[nodiscard]] int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1) {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = fd;
  }
  /// Close it now, reporting the error a write-back can show only here (EIO, ENOSPC, EDQUOT on
  /// NFS): false with errno set. Nothing to close is success.
  [[nodiscard]] bool close() {
    const int fd = release();
    return fd < 0 || ::close(fd) == 0;
  }

 private:
  int fd_ = -1;
};

/// What a file type is called in an error ("a FIFO").
inline const char* file_type_name(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFDIR:
      return "a directory";
    case S_IFLNK:
      return "a symbolic link";
    case S_IFIFO:
      return "a FIFO";
    case S_IFSOCK:
      return "a socket";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    default:
      return "not a regular file";
  }
}

/// Open `path` (relative to `dirfd`, or AT_FDCWD) for reading only when it is a regular file.
/// Whether an open follows a symbolic link (a user's own path) or refuses one (a path inside a
/// tree, or in a directory others can write).
enum class Links { refuse, follow };

/// The open itself cannot block (O_NONBLOCK: a FIFO without a writer, a device) and follows no
/// symlink unless Links::follow; the descriptor is then fstat'ed and anything but a regular file is
/// refused, naming `shown` (the path for messages; `path` when empty). O_NONBLOCK is cleared
/// before it is returned.
inline Expected<OwnedFd> open_regular(int dirfd, const std::string& path, Links links = Links::refuse,
                                      const std::string& shown = "") {
  const bool follow = links == Links::follow;
  const std::string& name = shown.empty() ? path : shown;
  // Looked at before it is opened: opening a device can act (a tape rewinds, a watchdog arms).
  struct stat first {};
  if (::fstatat(dirfd, path.c_str(), &first, follow ? 0 : AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(first.st_mode) &&
      !S_ISLNK(first.st_mode)) {
    return failure(name + " is " + file_type_name(first.st_mode) + ", not a regular file: not read");
  }
  const int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | (follow ? 0 : O_NOFOLLOW);
  OwnedFd fd(::openat(dirfd, path.c_str(), flags));
  if (!fd.valid()) {
    if (errno == ELOOP && !follow) {
      return failure(name + " is a symbolic link, not a regular file: not read");
    }
    return failure("cannot open " + name + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return failure("cannot stat " + name + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return failure(name + " is " + file_type_name(st.st_mode) + ", not a regular file: not read");
  }
  const int status = ::fcntl(fd.get(), F_GETFL);
  if (status < 0 || ::fcntl(fd.get(), F_SETFL, status & ~O_NONBLOCK) != 0) {
    return failure("cannot read " + name + ": " + std::strerror(errno));
  }
  return fd;
}

inline Expected<OwnedFd> open_regular(const std::string& path, Links links = Links::refuse) {
  return open_regular(AT_FDCWD, path, links);
}

/// A pipe whose ends close with it unless taken (pipe2 with O_CLOEXEC).
class OwnedPipe {
 public:
  OwnedPipe() = default;
  OwnedPipe(const OwnedPipe&) = delete;
  OwnedPipe& operator=(const OwnedPipe&) = delete;
  ~OwnedPipe() {
    close_end(fds_[0]);
    close_end(fds_[1]);
  }
  /// Make the pipe (`flags` beside O_CLOEXEC: O_NONBLOCK); false with errno set.
  [[nodiscard]] bool open(int flags = 0) { return ::pipe2(fds_, O_CLOEXEC | flags) == 0; }
  [[nodiscard]] int read_end() const { return fds_[0]; }
  [[nodiscard]] int write_end() const { return fds_[1]; }
  void close_read() { close_end(fds_[0]); }
  void close_write() { close_end(fds_[1]); }
  /// The read end, now the caller's; the write end is closed.
  [[nodiscard]] OwnedFd take_read() {
    close_write();
    const int fd = fds_[0];
    fds_[0] = -1;
    return OwnedFd(fd);
  }
  /// The write end, now the caller's; the read end is closed.
  [[nodiscard]] OwnedFd take_write() {
    close_read();
    const int fd = fds_[1];
    fds_[1] = -1;
    return OwnedFd(fd);
  }

 private:
  static void close_end(int& fd) {
    if (fd >= 0) {
      ::close(fd);
      fd = -1;
    }
  }
  int fds_[2] = {-1, -1};
};

/// read_within's outcome.
enum class ReadResult { ok, ended, timed_out };

/// What is left of a wait of `timeout_ms` that began at `since` (a signal that breaks the
/// wait must not start it again).
inline int ms_left(std::chrono::steady_clock::time_point since, int timeout_ms) {
  const auto spent =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - since).count();
  return static_cast<int>(std::max<long long>(0, timeout_ms - spent));
}

/// Read exactly `size` bytes, waiting at most `timeout_ms` for each next byte (< 0: no limit);
/// `ended` at an early end of file or on an error.
inline ReadResult read_within(int fd, void* data, std::size_t size, int timeout_ms) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    if (timeout_ms >= 0) {
      pollfd in{fd, POLLIN, 0};
      const auto since = std::chrono::steady_clock::now();
      int ready;
      while ((ready = ::poll(&in, 1, ms_left(since, timeout_ms))) < 0 && errno == EINTR) {
      }
      if (ready == 0) {
        return ReadResult::timed_out;
      }
      if (ready < 0) {
        return ReadResult::ended;
      }
    }
    const auto n = ::read(fd, p, size);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return ReadResult::ended;
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return ReadResult::ok;
}

/// In a forked child about to exec: mark every descriptor above 2 but `keep` close-on-exec
/// (another child's pipe end, should one lack O_CLOEXEC, would keep its stream open; a
/// descriptor to exec through stays usable). Async-signal-safe.
inline void cloexec_inherited(int keep = -1) {
#if defined(SYS_close_range) && defined(CLOSE_RANGE_CLOEXEC)
  const auto mark = [](unsigned from, unsigned to) {
    return ::syscall(SYS_close_range, from, to, CLOSE_RANGE_CLOEXEC) == 0;
  };
  const auto k = static_cast<unsigned>(keep);
  if (keep < 3 ? mark(3U, ~0U) : (keep == 3 || mark(3U, k - 1)) && mark(k + 1, ~0U)) {
    return;
  }
#endif
  for (int fd = 3; fd < 65536; ++fd) {
    if (fd != keep) {
      (void)::fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
  }
}

/// In a forked child that goes on without exec: close every descriptor above 2 but `keep`, so
/// the child holds only what is its own (its parent's listeners and connections are not).
inline void close_all_but(int keep) {
  const auto first = 3U;
  const auto k = static_cast<unsigned>(keep);
#if defined(SYS_close_range)
  if ((k <= first || ::syscall(SYS_close_range, first, k - 1, 0) == 0) &&
      ::syscall(SYS_close_range, std::max(first, k + 1), ~0U, 0) == 0) {
    return;
  }
#endif
  for (unsigned fd = first; fd < 65536; ++fd) {
    if (fd != k) {
      (void)::close(static_cast<int>(fd));
    }
  }
}

/// This binary, opened to start a fresh image of it from a forked child (exec_self); -1 on
/// failure. Through the descriptor, it works for a binary replaced or deleted since it started
/// (and under valgrind, which reports the program it runs as /proc/self/exe).
inline int open_self() {
  return ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
}
inline OwnedFd open_self_owned() {
  return OwnedFd(open_self());
}

/// /dev/null opened with `flags` (and O_CLOEXEC); not valid when it cannot be opened.
inline OwnedFd open_null(int flags) {
  return OwnedFd(::open("/dev/null", flags | O_CLOEXEC));
}

/// In a forked child: become this binary (`self` from open_self) running `argv`, with nothing
/// but descriptors 0-2 (and `keep`, when >= 3) inherited. Returns only when the exec failed.
/// Async-signal-safe.
inline void exec_self(int self, char* const* argv, char* const* envp = environ, int keep = -1) {
  cloexec_inherited(keep);
  ::fexecve(self, argv, envp);
}

/// In a forked child: make `from` descriptor `to` for the program it execs (dup2, or, when
/// they are the same, clearing close-on-exec, which dup2 would leave set). Async-signal-safe.
inline void move_fd(int from, int to) {
  if (from == to) {
    (void)::fcntl(to, F_SETFD, 0);
  } else {
    (void)::dup2(from, to);
  }
}

/// At the start of main(): open /dev/null on any of descriptors 0-2 that is closed, so no
/// pipe or file opened later takes its number (and is then read or written as stdio).
inline void keep_standard_fds_open() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
      (void)::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);  // takes the lowest free number: fd
    }
  }
}

}  // namespace ezpz::sys
