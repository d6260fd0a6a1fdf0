#include "sys/nodes/node_commands.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <string_view>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/yeet/outcome.hpp"
#include "sys/nodes/remote_process.hpp"

namespace ezpz::sys {

std::vector<core::NodeOutput> PosixNodeCommands::run_on_nodes(const core::HostList& hosts,
                                                              const std::vector<std::string>& args,
                                                              const core::ReachSpec& spec, double timeout_s) {
  ::signal(SIGPIPE, SIG_IGN);
  using Clock = std::chrono::steady_clock;
  std::vector<core::NodeOutput> out(hosts.size());
  std::vector<RemoteChild> procs(hosts.size());  // each closed, and reaped, on every way out
  const core::RemoteCommand command{args, core::Ship::never, core::Stdin::gated_pipe};
  const NodesOpen reach(transport_, hosts, spec);  // the launcher transport's agents
  // At most kMaxConnecting connections at once, each forked only when its turn comes (5,000
  // nodes are never 5,000 processes of the user's), with its own deadline from its opening.
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    out[i].host = hosts[i];
  }
  const auto allowed = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  std::vector<Clock::time_point> deadline(hosts.size(), Clock::time_point::max());
  std::size_t next = 0;
  std::size_t open = 0;
  auto open_gates = [&] {
    for (; next < procs.size() && open < kMaxConnecting; ++next) {
      auto& p = procs[next] = RemoteChild(transport_.start(hosts[next], command, spec, hosts[next]));
      if (!p.started()) {
        out[next].error = "cannot start a connection to " + hosts[next];
        continue;
      }
      const bool opened = open_gate(p);
      p.in.reset();  // the remote command reads nothing: it sees the end of its input
      if (opened) {
        deadline[next] = Clock::now() + allowed;
        ++open;
      } else {
        p.out.reset();
      }
    }
  };
  auto finish = [&](RemoteChild& p) {
    p.out.reset();
    --open;
  };
  auto reap_ended = [&] {  // those whose output has ended, reaped once they have (else at the end)
    for (std::size_t i = 0; i < next; ++i) {
      if (!procs[i].out.valid() && procs[i].started()) {
        if (auto status = procs[i].child.try_wait()) {
          out[i].exit_code = WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status);
        }
      }
    }
  };
  while (true) {
    reap_ended();
    open_gates();
    std::vector<pollfd> fds;
    std::vector<std::size_t> index;
    auto wait = Clock::duration::max();
    const auto now = Clock::now();
    for (std::size_t i = 0; i < next; ++i) {
      if (!procs[i].out.valid()) {
        continue;
      }
      if (now >= deadline[i]) {  // timed out
        procs[i].terminate();
        out[i].error = "no answer from " + hosts[i] + " within " + std::to_string(static_cast<int>(timeout_s)) + " s";
        finish(procs[i]);
        continue;
      }
      wait = std::min(wait, deadline[i] - now);
      fds.push_back({procs[i].out.get(), POLLIN, 0});
      index.push_back(i);
    }
    if (fds.empty()) {
      if (next >= procs.size()) {
        break;
      }
      continue;  // some timed out just now: open the next gates
    }
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wait).count() + 1;
    if (::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(ms, 60'000))) < 0 && errno != EINTR) {
      break;
    }
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
        continue;
      }
      auto& p = procs[index[k]];
      char buf[4096];
      const auto n = ::read(p.out.get(), buf, sizeof(buf));
      if (n > 0) {
        out[index[k]].output.append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        finish(p);
      }
    }
  }
  for (std::size_t i = 0; i < procs.size(); ++i) {
    auto& p = procs[i];
    if (p.out.valid()) {  // the poll failed: stop waiting for it
      p.terminate();
      p.out.reset();
      out[i].error = "no answer from " + hosts[i];
    }
    p.in.reset();  // never opened: it ends without connecting
    if (p.started()) {
      const int status = p.child.wait().value_or(0);
      out[i].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    // A connection failure comes back as a result line naming the host (see start_remote).
    if (out[i].exit_code == 255 && out[i].error.empty()) {
      if (auto r = core::decode_result(out[i].output.substr(0, out[i].output.find('\n')))) {
        out[i].error = r->error;
      } else {
        out[i].error = "cannot reach " + hosts[i] + " over ssh";
      }
    }
  }
  return out;
}

}  // namespace ezpz::sys
