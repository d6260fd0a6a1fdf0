// ezpz entry point: snapshot the environment, wire the real system in, run.
#include <iostream>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "sys/env_snapshot.hpp"
#include "sys/exec.hpp"
#include "sys/local_transfer.hpp"
#include "sys/posix_probe.hpp"

int main(int argc, char** argv) {
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
