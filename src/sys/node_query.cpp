// PosixProbe::ask_nodes: ezpz doctor's per-node exchange over yeet's transport. Every
// connection is forked first (no other thread runs yet), then one thread per node waits for
// the remote ezpz, pings it and reads its one-line answer.
#include <cerrno>
#include <chrono>
#include <csignal>
#include <thread>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sys/fd_io.hpp"
#include "sys/posix_probe.hpp"
#include "sys/remote.hpp"

namespace ezpz::sys {
namespace {

long long wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
long long steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// One line from `fd` before `deadline_ms` (steady clock); false at its end or on time-out.
bool read_line(int fd, std::string& line, long long deadline_ms) {
  while (true) {
    const long long left = deadline_ms - steady_ms();
    if (left <= 0) {
      return false;
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    char c;
    if (ready <= 0 || ::read(fd, &c, 1) != 1) {
      return false;
    }
    if (c == '\n') {
      return true;
    }
    line += c;
  }
}

void exchange(RemoteProcess& p, core::NodeReply& r, int timeout_s) {
  const long long deadline = steady_ms() + timeout_s * 1000LL;
  if (p.pid < 0) {
    return;
  }
  if (!await_ready(p, r.early, timeout_s)) {
    return;
  }
  r.ready = true;
  r.ready_ns = wall_ns();
  r.ping_ns = wall_ns();
  if (!write_all(p.in, "ping\n", 5)) {
    return;
  }
  std::string line;
  if (read_line(p.out, line, deadline)) {
    r.reply_ns = wall_ns();
    r.reply = std::move(line);
  }
}

}  // namespace

std::vector<core::NodeReply> PosixProbe::ask_nodes(const std::vector<std::string>& hosts,
                                                   const std::function<std::string(const std::string&)>& command,
                                                   const core::BroadcastSpec& spec, int timeout_s,
                                                   const std::function<void()>& started) const {
  ::signal(SIGPIPE, SIG_IGN);  // a node that went away must not take ezpz with it
  std::vector<core::NodeReply> replies(hosts.size());
  std::vector<RemoteProcess> procs(hosts.size());
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    replies[i].host = hosts[i];
    replies[i].start_ns = wall_ns();
    procs[i] = start_remote(hosts[i], command(hosts[i]), spec, hosts[i], true);
  }
  if (started) {
    started();
  }
  {
    std::vector<std::jthread> threads;
    threads.reserve(hosts.size());
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      threads.emplace_back([&, i] { exchange(procs[i], replies[i], timeout_s); });
    }
  }
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    auto& p = procs[i];
    if (p.pid < 0) {
      continue;
    }
    if (p.in >= 0) {
      ::close(p.in);
    }
    // Whatever else it said (a connection error's result line comes after a failed start).
    std::string rest;
    if (!replies[i].ready) {
      std::string line;
      while (read_line(p.out, line, steady_ms() + 200)) {
        rest += line + "\n";
        line.clear();
      }
      rest += line;
      replies[i].early += rest;
    }
    if (replies[i].reply.empty()) {
      ::kill(p.pid, SIGTERM);  // silent past the deadline: stop waiting for it
    }
    ::close(p.out);
    int status = 0;
    while (::waitpid(p.pid, &status, 0) < 0 && errno == EINTR) {
    }
    replies[i].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  return replies;
}

}  // namespace ezpz::sys
