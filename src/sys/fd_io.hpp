// Whole writes and reads on file descriptors, retrying on EINTR and short counts.
#pragma once

#include <cerrno>
#include <cstddef>

#include <unistd.h>

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

/// Read exactly `size` bytes; false at an early end of file or on an error.
inline bool read_exact(int fd, void* data, std::size_t size) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    const auto n = ::read(fd, p, size);
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

}  // namespace ezpz::sys
