#include "sys/os/line_relay.hpp"

#include <cerrno>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/os/exec.hpp"
#include "sys/os/fd_io.hpp"

namespace ezpz::sys {
namespace {

/// Output goes on even when our stdout is gone: a closed pipe only drops the bytes.
void pass_on(int fd, const std::string& text) {
  if (fd >= 0) {
    (void)write_all(fd, text.data(), text.size());
  }
}

/// A log file given up: said once, on this process's stderr (the console: it has every line).
void dropped(LineStream& s, std::string_view what) {
  const std::string note = "ezpz: warning: log " + s.log_path + " " + std::string(what) + " (" + std::strerror(errno) +
                           "): its lines go to the console only\n";
  (void)write_all(2, note.data(), note.size());
  s.log.reset();
  s.log_path.clear();
}

/// A rank's log file, made new (O_EXCL). One already there is emptied and reused only when it is
/// this user's own regular file with one link: on a shared machine another user may have made
/// the name first (errno EEXIST then).
OwnedFd open_log(const std::string& path) {
  OwnedFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (fd.valid() || errno != EEXIST) {
    return fd;
  }
  OwnedFd old(::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  struct stat st {};
  if (!old.valid() || ::fstat(old.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      st.st_nlink != 1) {
    errno = EEXIST;
    return OwnedFd();
  }
  if (::ftruncate(old.get(), 0) != 0) {
    return OwnedFd();
  }
  return old;
}

void log_bytes(LineStream& s, std::string_view bytes) {
  if (!s.log.valid() && !s.log_path.empty()) {
    s.log = open_log(s.log_path);
    if (!s.log.valid()) {
      dropped(s, "cannot be made");
    }
  }
  if (s.log.valid() && !write_all(s.log.get(), bytes.data(), bytes.size())) {
    dropped(s, "cannot be written");
  }
}

}  // namespace

void feed(LineStream& s, std::string_view bytes) {
  if (bytes.empty()) {
    return;
  }
  s.last_time = wall_clock_seconds();
  log_bytes(s, bytes);
  if (s.keep_tail) {
    s.tail.push(bytes);
  }
  if (s.out_fd < 0 && !s.whole) {
    return;  // sent elsewhere as it came (the shim's link): nothing to hold
  }
  s.pending.append(bytes);
  emit_lines(s, LineEnd::whole_lines);
}

void emit_lines(LineStream& s, LineEnd upto) {
  const bool flush = upto == LineEnd::flush;
  if (!s.whole) {
    pass_on(s.out_fd, s.pending);
    s.pending.clear();
    return;
  }
  // Every complete line at hand in one write: whole lines, and one system call for many.
  std::size_t start = 0;
  std::string out;
  if (s.label.empty()) {
    const auto last = s.pending.find_last_of("\r\n");
    start = last == std::string::npos ? 0 : last + 1;
    if (last != std::string::npos && s.pending[last] == '\r' && last + 1 == s.pending.size() && !flush) {
      start = last;  // a \r at the end may be the first half of \r\n: keep it with what follows
    }
    out.assign(s.pending, 0, start);
  } else {
    while (true) {
      auto end = s.pending.find_first_of("\r\n", start);
      if (end == std::string::npos || (s.pending[end] == '\r' && end + 1 == s.pending.size() && !flush)) {
        break;
      }
      if (s.pending[end] == '\r' && end + 1 < s.pending.size() && s.pending[end + 1] == '\n') {
        ++end;  // \r\n is one line end
      }
      out += s.label;
      out.append(s.pending, start, end - start + 1);
      start = end + 1;
    }
  }
  s.pending.erase(0, start);
  if (flush && !s.pending.empty()) {
    out += s.label + s.pending + "\n";  // its last line, unterminated: ended here
    s.pending.clear();
  } else if (s.pending.size() > kMaxHeldLine) {
    out += s.label + s.pending;
    s.pending.clear();
  }
  if (!out.empty()) {
    pass_on(s.out_fd, out);
  }
}

Pumped pump_lines(LineStream& s) {
  char buf[65536];
  auto n = ::read(s.fd.get(), buf, sizeof(buf));
  if (n > 0) {
    feed(s, std::string_view(buf, static_cast<std::size_t>(n)));
    return Pumped::data;
  }
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
    return Pumped::nothing;
  }
  emit_lines(s, LineEnd::flush);
  s.fd.reset();
  return Pumped::ended;
}

void drain_lines(LineStream& s) {
  if (!s.fd.valid()) {
    emit_lines(s, LineEnd::flush);
    return;
  }
  ::fcntl(s.fd.get(), F_SETFL, O_NONBLOCK);
  char buf[65536];
  ssize_t n;
  while ((n = ::read(s.fd.get(), buf, sizeof(buf))) > 0) {
    feed(s, std::string_view(buf, static_cast<std::size_t>(n)));
  }
  emit_lines(s, LineEnd::flush);
  s.fd.reset();
}

}  // namespace ezpz::sys
