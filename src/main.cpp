// ezpz entry point: snapshot the environment, wire the real system in, run.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

#include "cli/app.hpp"
#include "sys/agents/agent_transport.hpp"
#include "sys/broadcast/broadcast.hpp"
#include "sys/fs/local_transfer.hpp"
#include "sys/nodes/node_commands.hpp"
#include "sys/os/env_snapshot.hpp"
#include "sys/os/exec.hpp"
#include "sys/os/fd_io.hpp"
#include "sys/os/posix_probe.hpp"
#include "sys/os/stop_signals.hpp"
#include "sys/ranks/rank_channels.hpp"
#include "sys/remote/remote.hpp"
#include "sys/transport_switch.hpp"

int main(int argc, char** argv) {
  using namespace ezpz;
  sys::keep_standard_fds_open();  // a closed 0-2 would be reused by the next pipe
  const std::vector<std::string> args(argv + 1, argv + argc);
  // The per-rank shim writes next to nothing itself: no stream buffers of its own (7 page
  // faults in every rank's start), and no exit handlers at its end.
  const bool shim = !args.empty() && args.front() == "__rank-env";
  if (!shim) {
    std::ios::sync_with_stdio(false);
  }
  const auto env = sys::snapshot_environment();
  const cli::Ttys ttys{.out = sys::is_terminal(1), .err = sys::is_terminal(2)};
  cli::Terminal term(std::cout, std::cerr, cli::Terminal::want_colors(env, ttys), ttys);
  term.set_width(cli::Terminal::help_width(env, sys::terminal_columns(1)));
  // The real system, one object per capability (the ports in core/ say what each offers).
  sys::PosixProbe probe(env.get("PATH").value_or("/usr/local/bin:/usr/bin:/bin"));
  sys::PosixProcessControl process;
  sys::SshTransport ssh;
  sys::AgentTransport agents;
  sys::TransportSwitch transport(ssh, agents);
  sys::PosixNodeQuery node_query(transport);
  sys::PosixNodeCommands node_commands(transport);
  sys::StopSignals stop;
  sys::PosixLocalTransfer local(stop);
  sys::PosixBroadcaster broadcaster(transport, stop);
  sys::SecureRankChannels ranks;
  const cli::Ports ports{.probe = &probe,
                         .node_query = &node_query,
                         .jobs = &process,
                         .processes = &process,
                         .node_commands = &node_commands,
                         .trees = &local,
                         .staging = &local,
                         .archives = &local,
                         .manifests = &local,
                         .broadcaster = &broadcaster,
                         .transport = &transport,
                         .ranks = &ranks};
  int rc = cli::run_main(args, env, term, ports);
  std::cout.flush();
  if (shim) {
    std::cerr.flush();
    (void)std::fflush(nullptr);
    ::_exit(rc);
  }
  return rc;
}
