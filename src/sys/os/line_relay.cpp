#include "sys/os/line_relay.hpp"

#include <cerrno>

#include <fcntl.h>
#include <unistd.h>

#include "sys/os/fd_io.hpp"

namespace ezpz::sys {
namespace {

/// Output goes on even when our stdout is gone: a closed pipe only drops the bytes.
void pass_on(int fd, const std::string& text) {
  (void)write_all(fd, text.data(), text.size());
}

}  // namespace

void emit_lines(LineStream& s, bool flush) {
  if (!s.whole) {
    pass_on(s.out_fd, s.pending);
    s.pending.clear();
    return;
  }
  std::size_t start = 0;
  while (true) {
    auto end = s.pending.find_first_of("\r\n", start);
    if (end == std::string::npos) {
      break;
    }
    if (s.pending[end] == '\r' && end + 1 < s.pending.size() && s.pending[end + 1] == '\n') {
      ++end;  // \r\n is one line end
    }
    pass_on(s.out_fd, s.label + s.pending.substr(start, end - start + 1));
    start = end + 1;
  }
  s.pending.erase(0, start);
  if ((flush && !s.pending.empty()) || s.pending.size() > (1U << 20)) {
    pass_on(s.out_fd, s.label + s.pending);
    s.pending.clear();
  }
}

Pumped pump_lines(LineStream& s) {
  char buf[65536];
  auto n = ::read(s.fd.get(), buf, sizeof(buf));
  if (n > 0) {
    s.pending.append(buf, static_cast<std::size_t>(n));
    emit_lines(s, false);
    return Pumped::data;
  }
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
    return Pumped::nothing;
  }
  emit_lines(s, true);
  s.fd.reset();
  return Pumped::ended;
}

void drain_lines(LineStream& s) {
  if (!s.fd.valid()) {
    emit_lines(s, true);
    return;
  }
  ::fcntl(s.fd.get(), F_SETFL, O_NONBLOCK);
  char buf[65536];
  ssize_t n;
  while ((n = ::read(s.fd.get(), buf, sizeof(buf))) > 0) {
    s.pending.append(buf, static_cast<std::size_t>(n));
  }
  emit_lines(s, true);
  s.fd.reset();
}

}  // namespace ezpz::sys
