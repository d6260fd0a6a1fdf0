// PosixProbe's small system queries for ezpz doctor: a program's output, free space,
// the size of a tree, resource limits.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sys/os/fd_io.hpp"
#include "sys/os/owned.hpp"
#include "sys/os/posix_probe.hpp"

extern char** environ;  // NOLINT: POSIX

namespace ezpz::sys {
namespace {

std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& set,
                                           const std::vector<std::string>& unset) {
  std::vector<std::string> out;
  for (char** p = environ; p != nullptr && *p != nullptr; ++p) {
    std::string entry(*p);
    const std::string name = entry.substr(0, entry.find('='));
    const bool dropped = std::find(unset.begin(), unset.end(), name) != unset.end() ||
                         std::any_of(set.begin(), set.end(), [&](const auto& kv) { return kv.first == name; });
    if (!dropped) {
      out.push_back(std::move(entry));
    }
  }
  for (const auto& [name, value] : set) {
    out.push_back(name + "=" + value);
  }
  return out;
}

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The bytes under the directory open as `dirfd` (taken: closed by the call).
unsigned long long dir_bytes(OwnedFd dirfd) {
  DIR* dir = ::fdopendir(dirfd.get());
  if (dir == nullptr) {
    return 0;  // dirfd closes with its owner
  }
  (void)dirfd.release();  // closedir closes it now
  unsigned long long total = 0;
  while (auto* entry = ::readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") {
      continue;
    }
    struct stat st {};
    if (::fstatat(::dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      continue;
    }
    total += static_cast<unsigned long long>(st.st_blocks) * 512ULL;
    if (S_ISDIR(st.st_mode)) {
      OwnedFd sub(::openat(::dirfd(dir), entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (sub.valid()) {
        total += dir_bytes(std::move(sub));
      }
    }
  }
  ::closedir(dir);
  return total;
}

/// Read `fd` to its end into `output`, until `deadline` (now_ms): false when the deadline came.
bool read_until(int fd, long long deadline, std::string& output) {
  char buf[65536];
  while (true) {
    const long long left = deadline - now_ms();
    if (left <= 0) {
      return false;
    }
    pollfd ready_fd{fd, POLLIN, 0};
    const int ready = ::poll(&ready_fd, 1, static_cast<int>(std::min(left, 1000LL)));
    if (ready <= 0) {
      continue;  // EINTR or not yet
    }
    const auto n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return true;
    }
    output.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace

Expected<core::ProgramOutput> PosixProbe::run_program(const std::vector<std::string>& argv,
                                                      const std::vector<std::pair<std::string, std::string>>& set,
                                                      const std::vector<std::string>& unset, double timeout_s) const {
  if (argv.empty()) {
    return failure("run_program: empty command");
  }
  auto program = find_program(argv[0]);
  if (!program) {
    return Error{ExitCode::not_found, argv[0] + " is not on PATH: install it or add its directory to PATH"};
  }
  auto env = child_environment(set, unset);
  std::vector<char*> envp;
  for (auto& e : env) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (auto& a : args) {
    argp.push_back(a.data());
  }
  argp.push_back(nullptr);
  OwnedPipe out;
  if (!out.open()) {
    return failure(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  const OwnedFd null_in = open_null(O_RDONLY);
  const pid_t pid = ::fork();
  if (pid == 0) {
    // The child until exec: system calls only, no destructor runs (all above is close-on-exec).
    ::setpgid(0, 0);
    ::dup2(null_in.get(), 0);
    ::dup2(out.write_end(), 1);
    ::dup2(out.write_end(), 2);
    ::signal(SIGPIPE, SIG_DFL);
    ::execve(program->c_str(), argp.data(), envp.data());
    ::_exit(127);
  }
  if (pid < 0) {
    return failure(std::string("cannot start ") + argv[0] + ": " + std::strerror(errno));
  }
  OwnedChild child(pid);
  // The launcher's leftovers (e.g. an mpiexec's proxies) go with it, on every path out.
  const ScopeGuard kill_group([pid] { ::kill(-pid, SIGKILL); });
  const OwnedFd from = out.take_read();
  core::ProgramOutput result;
  result.timed_out = !read_until(from.get(), now_ms() + static_cast<long long>(timeout_s * 1000), result.output);
  if (result.timed_out) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
  }
  const int status = child.wait().value_or(0);
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_code = 128 + WTERMSIG(status);
  }
  return result;
}

std::optional<core::DiskSpace> PosixProbe::disk_space(const std::string& path) const {
  struct statvfs vfs {};
  if (::statvfs(path.c_str(), &vfs) != 0) {
    return std::nullopt;
  }
  return core::DiskSpace{static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize,
                         static_cast<unsigned long long>(vfs.f_blocks) * vfs.f_frsize};
}

std::optional<unsigned long long> PosixProbe::tree_bytes(const std::string& path) const {
  OwnedFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) {
    return std::nullopt;
  }
  return dir_bytes(std::move(fd));
}

core::ResourceLimit PosixProbe::resource_limit(const std::string& name) const {
  const int which = name == "nofile" ? RLIMIT_NOFILE : RLIMIT_MEMLOCK;
  rlimit limit{};
  core::ResourceLimit out;
  if (::getrlimit(which, &limit) != 0) {
    return out;
  }
  auto conv = [](rlim_t v) {
    return v == RLIM_INFINITY ? core::ResourceLimit::kUnlimited : static_cast<unsigned long long>(v);
  };
  out.soft = conv(limit.rlim_cur);
  out.hard = conv(limit.rlim_max);
  return out;
}

}  // namespace ezpz::sys
