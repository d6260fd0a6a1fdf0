// PosixProcessControl's view of running jobs (/proc): find them, signal them.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string_view>

#include <dirent.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/job/kill.hpp"
#include "core/launch/rank_env.hpp"
#include "sys/os/exec.hpp"
#include "sys/os/read_text.hpp"

namespace ezpz::sys {
namespace {

/// Field `n` (1-based, n >= 3) of /proc/PID/stat ("" when unknown).
std::string stat_field(int pid, int n) {
  auto stat = read_head("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!stat) {
    return "";
  }
  // pid (comm) state ppid ...: comm may hold spaces and parentheses; the last ')' ends it.
  auto at = stat->rfind(')');
  for (int field = 2; at != std::string::npos && field < n; ++field) {
    at = stat->find(' ', at + 1);
  }
  if (at == std::string::npos) {
    return "";
  }
  const auto end = stat->find(' ', at + 1);
  return stat->substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
}

/// The parent of `pid` (0 when unknown).
int parent_of(int pid) {
  return std::atoi(stat_field(pid, 4).c_str());
}

/// When `pid` started (clock ticks since boot; "" when it is gone): with the PID, its identity.
std::string start_time(int pid) {
  return stat_field(pid, 22);
}

/// A pidfd for `pid`, when it is still the process that started at `started` (else none).
OwnedFd open_pidfd(int pid, const std::string& started) {
  OwnedFd fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (fd.valid() && (started.empty() || start_time(pid) != started)) {
    return OwnedFd();
  }
  return fd;
}

/// Whether `pid` is an ezpz rank shim (`ezpz __rank-env ...`) of user `uid`.
bool is_rank_shim(int pid, unsigned uid) {
  const std::string dir = "/proc/" + std::to_string(pid);
  struct stat owner {};
  if (pid <= 1 || ::stat(dir.c_str(), &owner) != 0 || owner.st_uid != uid) {
    return false;
  }
  const auto cmdline = read_head(dir + "/cmdline", 4096);
  const auto first = cmdline ? cmdline->find('\0') : std::string::npos;
  return first != std::string::npos && cmdline->compare(first + 1, 11, std::string_view("__rank-env\0", 11)) == 0;
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
    const std::string started = start_time(pid);
    struct stat owner {};
    core::ProcessInfo p;
    p.pid = pid;
    p.uid = ::stat(dir.c_str(), &owner) == 0 ? owner.st_uid : 0xFFFFFFFFU;
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
    const bool shim = is_rank_shim(p.ppid, p.uid);  // held by a pidfd too: ezpz kill may signal it
    if (shim && pidfds_.count(p.ppid) == 0) {
      if (auto fd = open_pidfd(p.ppid, start_time(p.ppid)); fd.valid()) {
        pidfds_[p.ppid] = std::move(fd);
      }
    }
    p.shim = shim && pidfds_.count(p.ppid) != 0 ? p.ppid : 0;
    // Held by a pidfd from here on (or known gone): its PID may be another's by the time we
    // signal it (kernels without pidfd_open: the start time is compared at each signal).
    if (auto fd = open_pidfd(pid, started); fd.valid()) {
      pidfds_[pid] = std::move(fd);
    } else if (errno == ESRCH || start_time(pid) != started) {
      continue;
    }
    started_[pid] = started;
    out.push_back(std::move(p));
  }
  ::closedir(proc);
  return out;
}

bool PosixProcessControl::signal_shim(int shim, int sig) {
  const auto it = pidfds_.find(shim);
  if (it == pidfds_.end()) {
    return false;
  }
  siginfo_t info{};
  info.si_signo = sig;
  info.si_code = SI_QUEUE;
  info.si_pid = ::getpid();
  info.si_uid = ::getuid();
  info.si_value.sival_int = core::kKillMark;
  return ::syscall(SYS_pidfd_send_signal, it->second.get(), sig, &info, 0) == 0;
}

std::vector<int> PosixProcessControl::self_and_ancestors() {
  std::vector<int> out;
  for (int pid = ::getpid(); pid > 1 && out.size() < 256; pid = parent_of(pid)) {
    out.push_back(pid);
  }
  return out;
}

bool PosixProcessControl::send_signal(int pid, int sig) {
  if (auto it = pidfds_.find(pid); it != pidfds_.end()) {
    return ::syscall(SYS_pidfd_send_signal, it->second.get(), sig, nullptr, 0) == 0;
  }
  if (auto it = started_.find(pid); it != started_.end() && start_time(pid) != it->second) {
    return false;  // not the process that was found: it ended, and its PID is another's
  }
  return ::kill(pid, sig) == 0;
}

bool PosixProcessControl::alive(int pid) {
  if (auto it = pidfds_.find(pid); it != pidfds_.end()) {
    struct pollfd p = {it->second.get(), POLLIN, 0};  // readable once it has ended
    return ::poll(&p, 1, 0) == 0;
  }
  if (auto it = started_.find(pid); it != started_.end() && start_time(pid) != it->second) {
    return false;
  }
  // A zombie (dead, not yet reaped by its parent, e.g. the launcher) is gone for our purposes,
  // and so is one reaped while we read its stat (the read fails, or reads nothing).
  auto stat = read_head("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!stat || stat->empty()) {
    return false;
  }
  const auto close = stat->rfind(')');
  return close == std::string::npos || close + 2 >= stat->size() || (*stat)[close + 2] != 'Z';
}

}  // namespace ezpz::sys
