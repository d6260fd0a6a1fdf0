#include "sys/nodes/remote_process.hpp"

#include <algorithm>
#include <cerrno>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "core/reach/spec.hpp"
#include "core/reach/transport.hpp"
#include "sys/os/fd_io.hpp"

namespace ezpz::sys {
namespace {

/// Copy `from` to the pipe `to` by `deadline` (a child that asked for the binary and then
/// stopped reading must not hold its parent past it).
bool send_file(int from, int to, std::chrono::steady_clock::time_point deadline) {
  const int flags = ::fcntl(to, F_GETFL);
  ::fcntl(to, F_SETFL, flags | O_NONBLOCK);
  std::vector<char> buf(1 << 20);
  bool ok = true;
  while (ok) {
    const auto n = ::read(from, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      ok = n == 0;
      break;
    }
    for (std::size_t done = 0; ok && done < static_cast<std::size_t>(n);) {
      const auto w = ::write(to, buf.data() + done, static_cast<std::size_t>(n) - done);
      if (w > 0) {
        done += static_cast<std::size_t>(w);
        continue;
      }
      if (w < 0 && errno != EAGAIN && errno != EINTR) {
        ok = false;
        break;
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      pollfd out{to, POLLOUT, 0};
      ok = left > 0 && ::poll(&out, 1, static_cast<int>(std::min<long long>(left, 1 << 30))) >= 0;
    }
  }
  ::fcntl(to, F_SETFL, flags);
  return ok;
}

}  // namespace

bool open_gate(const RemoteProcess& p) {
  return p.pid > 0 && p.in >= 0 && write_all(p.in, "g", 1);  // the child reads exactly this byte
}

bool await_ready(const RemoteProcess& p, std::string& early, int timeout_s) {
  return await_ready(p, early, std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s));
}

bool await_ready(const RemoteProcess& p, std::string& early, std::chrono::steady_clock::time_point deadline,
                 const std::atomic<bool>* cancel) {
  std::string line;
  while (true) {
    // Rounded up: a wait that ends with nothing ends at the deadline, not a millisecond before.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    const auto slice = cancel != nullptr ? std::min<long long>(left, 100) : left;
    pollfd fd{p.out, POLLIN, 0};
    // Past the deadline, what has already arrived still counts (children started together
    // and awaited in turn: a slow first one must not fail the ready ones after it).
    const int ready = ::poll(&fd, 1, static_cast<int>(std::clamp<long long>(slice, 0, 1 << 30)));
    const bool cancelled = cancel != nullptr && cancel->load();
    if ((ready < 0 && errno == EINTR) || (ready == 0 && !cancelled && std::chrono::steady_clock::now() < deadline)) {
      continue;  // a signal, or one slice of the wait
    }
    char c;
    if (cancelled || ready <= 0 || ::read(p.out, &c, 1) != 1) {
      early += line;
      return false;
    }
    if (c != '\n') {
      line += c;
      continue;
    }
    if (line == core::kReadyLine) {
      return true;
    }
    if (line.rfind(core::kShipLine, 0) == 0) {
      const OwnedFd self = open_self_owned();
      if (!self.valid() || p.in < 0 || !send_file(self.get(), p.in, deadline)) {
        return false;
      }
    } else {
      early += line + "\n";
    }
    line.clear();
  }
}

}  // namespace ezpz::sys
