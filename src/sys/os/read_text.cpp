#include "sys/os/read_text.hpp"

#include <cerrno>
#include <cstring>

#include <unistd.h>

#include "sys/os/fd_io.hpp"

namespace ezpz::sys {

Expected<std::string> read_head(const std::string& path, std::size_t n) {
  EZPZ_TRY_ASSIGN(auto opened, open_regular(path));
  const int fd = opened.get();
  std::string text(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    auto r = ::read(fd, text.data() + got, n - got);
    if (r < 0 && errno == EINTR) {
      continue;
    }
    if (r < 0) {
      // Not an empty text: a /proc file whose process went away between open and read fails
      // here (ESRCH), and its caller must not read that as a process with no state.
      return failure("cannot read " + path + ": " + std::strerror(errno));
    }
    if (r == 0) {
      break;
    }
    got += static_cast<std::size_t>(r);
  }
  text.resize(got);
  return text;
}

Expected<std::string> read_whole(const std::string& path, std::size_t limit) {
  EZPZ_TRY_ASSIGN(auto opened, open_regular(path));
  const int fd = opened.get();
  std::string text;
  char buf[65536];
  while (true) {
    auto n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return failure("cannot read " + path + ": " + std::strerror(errno));
    }
    if (n == 0) {
      break;
    }
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > limit) {
      return failure(path + " is larger than " + std::to_string(limit) + " bytes");
    }
  }
  return text;
}

}  // namespace ezpz::sys
