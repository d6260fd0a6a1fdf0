// PosixProbe::ask_nodes: ezpz doctor's per-node exchange over yeet's transport. Every
// connection is forked first (no other thread runs yet) but waits at its gate; threads then
// open the gates a bounded number at a time (each node's timeout counts from its own
// opening), wait for the remote ezpz, ping it and read its one-line answer. Opening every
// connection at once makes a hundred nodes' handshakes (and their ~/.bashrc) compete for the
// same moment and time out together.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <semaphore>
#include <thread>

#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/reach/transport.hpp"
#include "sys/nodes/node_commands.hpp"
#include "sys/nodes/remote_process.hpp"
#include "sys/os/fd_io.hpp"

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

/// Each node holds two pipes until it is reaped: lift the soft descriptor limit to the hard one.
void allow_descriptors(std::size_t hosts) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < 4 * hosts + 64) {
    lim.rlim_cur = std::min<rlim_t>(lim.rlim_max, 4 * hosts + 64);
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
}

void exchange(const RemoteChild& p, core::NodeReply& r, int timeout_s) {
  r.start_ns = wall_ns();
  const long long deadline = steady_ms() + timeout_s * 1000LL;
  if (!open_gate(p)) {
    return;
  }
  if (!await_ready(p, r.early, timeout_s)) {
    return;
  }
  r.ready = true;
  r.ready_ns = wall_ns();
  r.ping_ns = wall_ns();
  if (!write_all(p.in.get(), "ping\n", 5)) {
    return;
  }
  std::string line;
  if (read_line(p.out.get(), line, deadline)) {
    r.reply_ns = wall_ns();
    r.reply = std::move(line);
  }
}

/// After the exchange: what else a node that never got ready said (a connection error's
/// result line comes after a failed start), its exit code; one that stayed silent is stopped.
void reap(RemoteChild& p, core::NodeReply& r) {
  if (!p.started()) {
    return;
  }
  const bool stopped = r.reply.empty();
  if (stopped) {
    p.terminate();  // silent past the deadline (or never ready): stop waiting for it
  }
  p.in.reset();
  if (!r.ready) {
    std::string line;
    while (read_line(p.out.get(), line, steady_ms() + 200)) {
      r.early += line + "\n";
      line.clear();
    }
    r.early += line;
  }
  p.out.reset();
  const int status = p.child.wait().value_or(0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  // Ended by the SIGTERM sent here (or its ssh passing it on as 143), not by itself.
  r.timed_out = stopped && ((WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) || r.exit_code == 143);
}

}  // namespace

std::vector<core::NodeReply> PosixNodeQuery::ask_nodes(const std::vector<std::string>& hosts,
                                                       const core::RemoteCommand& command, const core::ReachSpec& spec,
                                                       int timeout_s, const std::function<void()>& started) const {
  ::signal(SIGPIPE, SIG_IGN);  // a node that went away must not take ezpz with it
  allow_descriptors(hosts.size());
  std::vector<core::NodeReply> replies(hosts.size());
  const NodesOpen reach(transport_, hosts, spec);  // the launcher transport's agents
  std::vector<RemoteChild> procs(hosts.size());    // each closed, and reaped, on every way out
  auto gated = command;                            // each connection waits at its gate: at most a few open at once
  gated.in = core::Stdin::gated_pipe;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    replies[i].host = hosts[i];
    procs[i] = RemoteChild(transport_.start(hosts[i], gated, spec, hosts[i]));
  }
  if (started) {
    started();
  }
  {
    std::counting_semaphore<kMaxConnecting> slots(static_cast<std::ptrdiff_t>(kMaxConnecting));
    std::vector<std::jthread> threads;
    threads.reserve(hosts.size());
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      threads.emplace_back([&, i] {
        slots.acquire();
        exchange(procs[i], replies[i], timeout_s);
        reap(procs[i], replies[i]);  // a connection counts until it has ended
        slots.release();
      });
    }
  }
  return replies;
}

}  // namespace ezpz::sys
