// PosixProcessControl's view of running jobs (/proc) and its runs of ezpz on other nodes.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string_view>

#include <dirent.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/rank_env.hpp"
#include "sys/fs/tree.hpp"
#include "sys/os/exec.hpp"
#include "sys/remote/remote.hpp"

namespace ezpz::sys {
namespace {

/// The parent of `pid` from /proc/PID/stat (0 when unknown).
int parent_of(int pid) {
  auto stat = read_head("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!stat) {
    return 0;
  }
  // pid (comm) state ppid ...: comm may hold spaces and parentheses; the last ')' ends it.
  const auto close = stat->rfind(')');
  if (close == std::string::npos || close + 4 > stat->size()) {
    return 0;
  }
  return std::atoi(stat->c_str() + close + 4);
}

}  // namespace

std::vector<core::ProcessInfo> PosixProcessControl::job_processes() {
  std::vector<core::ProcessInfo> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) {
    return out;
  }
  const std::string marker = std::string(core::kJobIdVariable) + "=";
  // This node's processes: those in our UTS namespace (all of them on a real node; on
  // namespace-simulated nodes that share one kernel, only this node's).
  char self_uts[64] = {};
  const auto self_uts_len = ::readlink("/proc/self/ns/uts", self_uts, sizeof(self_uts) - 1);
  while (auto* e = ::readdir(proc)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0) {
      continue;
    }
    const std::string dir = "/proc/" + std::to_string(pid);
    auto environ = read_whole(dir + "/environ", 1U << 20);  // EACCES for other users' processes
    if (!environ) {
      continue;
    }
    char uts[64] = {};
    const auto uts_len = ::readlink((dir + "/ns/uts").c_str(), uts, sizeof(uts) - 1);
    if (self_uts_len > 0 && uts_len > 0 &&
        std::string_view(uts, static_cast<std::size_t>(uts_len)) !=
            std::string_view(self_uts, static_cast<std::size_t>(self_uts_len))) {
      continue;
    }
    core::ProcessInfo p;
    p.pid = pid;
    for (std::size_t start = 0; start < environ->size();) {
      auto end = environ->find('\0', start);
      if (end == std::string::npos) {
        end = environ->size();
      }
      if (environ->compare(start, marker.size(), marker) == 0) {
        p.job_id = environ->substr(start + marker.size(), end - start - marker.size());
      }
      start = end + 1;
    }
    if (p.job_id.empty()) {
      continue;
    }
    if (auto cmdline = read_whole(dir + "/cmdline", 1U << 16)) {
      for (char& c : *cmdline) {
        c = c == '\0' ? ' ' : c;
      }
      while (!cmdline->empty() && cmdline->back() == ' ') {
        cmdline->pop_back();
      }
      p.cmdline = *cmdline;
    }
    p.ppid = parent_of(pid);
    out.push_back(std::move(p));
  }
  ::closedir(proc);
  return out;
}

std::vector<int> PosixProcessControl::self_and_ancestors() {
  std::vector<int> out;
  for (int pid = ::getpid(); pid > 1 && out.size() < 256; pid = parent_of(pid)) {
    out.push_back(pid);
  }
  return out;
}

bool PosixProcessControl::send_signal(int pid, int sig) {
  return ::kill(pid, sig) == 0;
}

bool PosixProcessControl::alive(int pid) {
  // A zombie (dead, not yet reaped by its parent, e.g. the launcher) is gone for our purposes.
  auto stat = read_head("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!stat) {
    return false;
  }
  const auto close = stat->rfind(')');
  return close == std::string::npos || close + 2 >= stat->size() || (*stat)[close + 2] != 'Z';
}

std::vector<core::NodeOutput> PosixProcessControl::run_on_nodes(const core::HostList& hosts,
                                                                const std::vector<std::string>& args,
                                                                const core::BroadcastSpec& spec, double timeout_s) {
  ::signal(SIGPIPE, SIG_IGN);
  using Clock = std::chrono::steady_clock;
  std::vector<core::NodeOutput> out(hosts.size());
  std::vector<RemoteProcess> procs;
  const auto command = core::remote_command(spec, args, false);
  // Every connection is forked now but waits at its gate (see start_remote); at most
  // kMaxConnecting are open at once, each with its own deadline from its opening.
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    out[i].host = hosts[i];
    procs.push_back(start_remote(hosts[i], command, spec, hosts[i], true, true));
    if (procs.back().pid < 0) {
      out[i].error = "cannot start a connection to " + hosts[i];
    }
  }
  const auto allowed = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  std::vector<Clock::time_point> deadline(hosts.size(), Clock::time_point::max());
  std::size_t next = 0;
  std::size_t open = 0;
  auto open_gates = [&] {
    for (; next < procs.size() && open < kMaxConnecting; ++next) {
      auto& p = procs[next];
      if (p.pid < 0) {
        continue;
      }
      const bool opened = open_gate(p);
      ::close(p.in);  // the remote command reads nothing: it sees the end of its input
      p.in = -1;
      if (opened) {
        deadline[next] = Clock::now() + allowed;
        ++open;
      } else {
        ::close(p.out);
        p.out = -1;
      }
    }
  };
  auto finish = [&](RemoteProcess& p) {
    ::close(p.out);
    p.out = -1;
    --open;
  };
  while (true) {
    open_gates();
    std::vector<pollfd> fds;
    std::vector<std::size_t> index;
    auto wait = Clock::duration::max();
    const auto now = Clock::now();
    for (std::size_t i = 0; i < next; ++i) {
      if (procs[i].out < 0) {
        continue;
      }
      if (now >= deadline[i]) {  // timed out
        ::kill(procs[i].pid, SIGTERM);
        out[i].error = "no answer from " + hosts[i] + " within " + std::to_string(static_cast<int>(timeout_s)) + " s";
        finish(procs[i]);
        continue;
      }
      wait = std::min(wait, deadline[i] - now);
      fds.push_back({procs[i].out, POLLIN, 0});
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
      const auto n = ::read(p.out, buf, sizeof(buf));
      if (n > 0) {
        out[index[k]].output.append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        finish(p);
      }
    }
  }
  for (std::size_t i = 0; i < procs.size(); ++i) {
    auto& p = procs[i];
    if (p.out >= 0) {  // the poll failed: stop waiting for it
      ::kill(p.pid, SIGTERM);
      ::close(p.out);
      out[i].error = "no answer from " + hosts[i];
    }
    if (p.in >= 0) {
      ::close(p.in);  // never opened: it ends without connecting
    }
    if (p.pid > 0) {
      int status = 0;
      ::waitpid(p.pid, &status, 0);
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
