// ezpz's store-and-forward algorithm (--strategy greedy), kept for comparison with the relay
// tree: every node that has the copy pushes it whole to one that has not (`ezpz __yeet-send`),
// up to `per_source` pushes at a time from each.
#include <atomic>
#include <cerrno>
#include <csignal>
#include <map>
#include <string>
#include <vector>

#include <poll.h>
#include <unistd.h>

#include "core/yeet/relay_args.hpp"
#include "sys/broadcast/broadcast.hpp"
#include "sys/nodes/remote_process.hpp"
#include "sys/os/fd_io.hpp"

namespace ezpz::sys {
namespace {

/// One push of greedy_broadcast: the copy from `source` ("" this node) to `target`.
struct Push {
  std::string source;
  std::string target;
  RemoteChild proc;  ///< `ezpz __yeet-send`; its result lines on proc.out
  std::string text;  ///< what it printed so far
};

/// Start `ezpz __yeet-send` from `source` ("" this node: run here) to `target`; not started()
/// when it could not be.
RemoteChild start_push(core::Transport& transport, const core::BroadcastSpec& options, const std::string& source,
                       const std::string& target) {
  const auto send = core::send_args(options, core::relay_tree({target}, 1));
  if (!source.empty()) {  // from a node that has the copy (and this binary: it ran a relay)
    return RemoteChild(transport.start(source, core::RemoteCommand{send, core::Ship::never, core::Stdin::none},
                                       options.reach, target));
  }
  std::vector<std::string> argv = {options.reach.self_exe};
  argv.insert(argv.end(), send.begin(), send.end());
  std::vector<char*> args;
  for (auto& a : argv) {
    args.push_back(a.data());
  }
  args.push_back(nullptr);
  RemoteChild push;
  OwnedPipe out;
  if (!out.open()) {
    return push;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {  // until exec: no destructor runs here (the pipe is the parent's)
    ::dup2(out.write_end(), 1);
    ::signal(SIGPIPE, SIG_DFL);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  if (pid > 0) {
    push.child = OwnedChild(pid);
    push.out = out.take_read();
  }
  return push;
}

/// Wait until one of `running` has ended (it is reaped) and return its pid, gathering what each
/// prints meanwhile (an end of output closes it); 0 once `stop` is set, -1 when polling fails.
/// Only these children are waited for: never another child of this process.
pid_t await_push(std::map<pid_t, Push>& running, const std::atomic<bool>& stop) {
  std::vector<pollfd> fds;
  std::vector<Push*> who;
  while (!stop.load()) {
    for (auto& [pid, push] : running) {
      if (push.proc.child.try_wait()) {
        return pid;
      }
    }
    fds.clear();
    who.clear();
    for (auto& [pid, push] : running) {
      if (push.proc.out.valid()) {
        fds.push_back({push.proc.out.get(), POLLIN, 0});
        who.push_back(&push);
      }
    }
    // One whose output ended is about to exit; the others are looked at now and then too (its
    // output may be held open by a process it started).
    const int ms = fds.size() < running.size() ? 10 : 250;
    if (::poll(fds.data(), fds.size(), ms) < 0 && errno != EINTR) {
      return -1;
    }
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
        continue;
      }
      char buf[4096];
      const auto n = ::read(fds[k].fd, buf, sizeof(buf));
      if (n > 0) {
        who[k]->text.append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        who[k]->proc.out.reset();
      }
    }
  }
  return 0;
}

/// The result of a push that ended: its own line about its target, if it printed one.
core::NodeResult push_result(Push& push) {
  char buf[4096];
  ssize_t n;
  while (push.proc.out.valid() && (n = ::read(push.proc.out.get(), buf, sizeof(buf))) > 0) {
    push.text.append(buf, static_cast<std::size_t>(n));
  }
  push.proc.out.reset();
  const auto& text = push.text;
  core::NodeResult r;
  r.host = push.target;
  r.error =
      "the push from " + (push.source.empty() ? std::string("this node") : push.source) + " ended without a report";
  for (std::size_t start = 0; start < text.size();) {
    auto nl = text.find('\n', start);
    if (auto got = core::decode_result(text.substr(start, nl == std::string::npos ? nl : nl - start));
        got && got->host == r.host) {
      r = *got;
    }
    start = nl == std::string::npos ? text.size() : nl + 1;
  }
  return r;
}

}  // namespace

std::vector<core::NodeResult> greedy_broadcast(core::Transport& transport, const core::HostList& targets,
                                               const core::BroadcastSpec& options, int per_source,
                                               const std::atomic<bool>& stop) {
  ::signal(SIGPIPE, SIG_IGN);
  std::map<std::string, int> load{{"", 0}};  // "" = this node
  std::map<pid_t, Push> running;             // each closed, and reaped, on every way out
  std::vector<core::NodeResult> results;
  std::size_t next = 0;
  while ((next < targets.size() || !running.empty()) && !stop.load()) {
    while (next < targets.size()) {
      auto best = load.end();
      for (auto it = load.begin(); it != load.end(); ++it) {
        if (it->second < per_source && (best == load.end() || it->second < best->second)) {
          best = it;
        }
      }
      if (best == load.end()) {
        break;
      }
      auto proc = start_push(transport, options, best->first, targets[next]);
      if (proc.started()) {
        const pid_t pid = proc.child.pid();
        running.emplace(pid, Push{best->first, targets[next], std::move(proc), {}});
        ++best->second;
      } else {
        core::NodeResult r;
        r.host = targets[next];
        r.error = "cannot start a push";
        results.push_back(r);
      }
      ++next;
    }
    const pid_t pid = running.empty() ? -1 : await_push(running, stop);
    if (pid <= 0) {
      break;
    }
    auto it = running.find(pid);
    const auto r = push_result(it->second);
    --load[it->second.source];
    if (r.ok()) {
      load[r.host] = 0;  // it has the copy now: a new source
    }
    results.push_back(r);
    running.erase(it);
  }
  for (auto& [pid, push] : running) {  // interrupted
    push.proc.terminate();
    (void)push.proc.child.wait();
    push.proc.out.reset();
    core::NodeResult r;
    r.host = push.target;
    r.error = "interrupted";
    results.push_back(r);
  }
  return results;
}

}  // namespace ezpz::sys
