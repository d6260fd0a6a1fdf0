#include "sys/os/env_snapshot.hpp"

#include <climits>
#include <string_view>

#include <sys/ioctl.h>
#include <unistd.h>

extern char** environ;  // NOLINT: POSIX

namespace ezpz::sys {

core::Env snapshot_environment() {
  core::Env env;
  for (char** p = environ; p != nullptr && *p != nullptr; ++p) {
    std::string_view entry(*p);
    auto eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      continue;
    }
    env.vars.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) {
    env.hostname = host;
  }
  env.uid = static_cast<unsigned>(getuid());
  env.pid = static_cast<int>(getpid());
  char self[PATH_MAX] = {};
  if (auto n = readlink("/proc/self/exe", self, sizeof(self) - 1); n > 0) {
    env.self_exe.assign(self, static_cast<std::size_t>(n));
  }
  return env;
}

bool is_terminal(int fd) {
  return isatty(fd) == 1;
}

std::size_t terminal_columns(int fd) {
  winsize ws{};
  return ::ioctl(fd, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
}

}  // namespace ezpz::sys
