// ezpz entry point: snapshot the environment, wire the real system in, run.
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/app.hpp"
#include "sys/fs/janitor.hpp"
#include "sys/fs/local_transfer.hpp"
#include "sys/os/env_snapshot.hpp"
#include "sys/os/exec.hpp"
#include "sys/os/fd_io.hpp"
#include "sys/os/posix_probe.hpp"
#include "sys/remote/remote.hpp"

int main(int argc, char** argv) {
  ezpz::sys::keep_standard_fds_open();                                  // a closed 0-2 would be reused by the next pipe
  if (argc > 1 && std::string_view(argv[1]) == ezpz::sys::kSshStdio) {  // a transport (sys/remote.cpp)
    return ezpz::sys::ssh_stdio_main(argc - 2, argv + 2);
  }
  if (argc > 1 && std::string_view(argv[1]) == ezpz::sys::kJanitor) {  // a relay's watcher (sys/janitor.cpp)
    return ezpz::sys::janitor_main(argc - 2, argv + 2);
  }
  std::ios::sync_with_stdio(false);
  const std::vector<std::string> args(argv + 1, argv + argc);
  const auto env = ezpz::sys::snapshot_environment();
  const bool stderr_tty = ezpz::sys::is_terminal(2);
  ezpz::cli::Terminal term(std::cout, std::cerr, ezpz::cli::Terminal::want_color(env, stderr_tty), stderr_tty);
  ezpz::sys::PosixProbe probe(env.get("PATH").value_or("/usr/local/bin:/usr/bin:/bin"));
  ezpz::sys::PosixProcessControl process;
  ezpz::sys::PosixLocalTransfer transfer;
  int rc = ezpz::cli::run_main(args, env, term, probe, process, transfer);
  std::cout.flush();
  return rc;
}
