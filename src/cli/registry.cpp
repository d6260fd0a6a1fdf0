// The one table of subcommands. Only subcommands that work are listed.
#include "cli/command.hpp"
#include "cli/completions.hpp"
#include "cli/doctor.hpp"
#include "cli/env_cmd.hpp"
#include "cli/help.hpp"
#include "cli/hidden_modes.hpp"
#include "cli/kill.hpp"
#include "cli/launch.hpp"
#include "cli/plot.hpp"
#include "cli/rank_env.hpp"
#include "cli/self_update.hpp"
#include "cli/submit.hpp"
#include "cli/tar_env.hpp"
#include "cli/test_cmd.hpp"
#include "cli/yeet.hpp"
#include "cli/yeet_relay.hpp"

namespace ezpz::cli {

const std::vector<CommandInfo>& command_table() {
  static const std::vector<CommandInfo> table = {
      {"launch", "Launch a command on every process of the job (mpiexec, srun, mpirun or built-in)",
       [] { return std::unique_ptr<Command>(new LaunchCommand); }, kProbe | kJobs | kStaging | kRanks | kNodeCommands},
      {"yeet", "Copy an env, directory or tarball to node-local storage (/tmp) and patch a venv for it",
       [] { return std::unique_ptr<Command>(new YeetCommand); },
       kProbe | kTrees | kStaging | kArchives | kManifests | kBroadcast},
      {"tar-env", "Pack an env into <name>.tar.zst for fast copies with yeet",
       [] { return std::unique_ptr<Command>(new TarEnvCommand); }, kTrees | kStaging | kArchives},
      {"test",
       "Smoke-test distributed training: launch a small MLP run on every rank (with the job's python3 and "
       "torch, or the C++ companion; exit 127 when neither is there)",
       [] { return std::unique_ptr<Command>(new TestCommand); }, kProbe | kJobs | kRanks},
      {"plot", "Plot JSONL metrics files (ezpz History) in the terminal, overlaid",
       [] { return std::unique_ptr<Command>(new PlotCommand); }, kProbe},
      {"doctor", "Check this host, every node (--nodes) and the launch line (--launch) before a job; remedies",
       [] { return std::unique_ptr<Command>(new DoctorCommand); }, kProbe | kNodeQuery | kJobs},
      {"env", "Print export lines for this job (HOSTFILE, NHOSTS, NGPUS, EZPZ_LAUNCH...): eval \"$(ezpz env)\"",
       [] { return std::unique_ptr<Command>(new EnvCommand); }, kProbe},
      {"submit", "Write (and with --submit, qsub/sbatch) a batch script that runs ezpz launch -- COMMAND",
       [] { return std::unique_ptr<Command>(new SubmitCommand); }, kProbe | kJobs},
      {"kill", "Stop the processes of ezpz-launched jobs, here or on every node (--all-nodes)",
       [] { return std::unique_ptr<Command>(new KillCommand); }, kProbe | kJobs | kProcesses | kNodeCommands},
      {"self-update", "Update this ezpz to the newest release (checked; the previous one kept), --check, --rollback",
       [] { return std::unique_ptr<Command>(new SelfUpdateCommand); }, kProbe | kStaging | kArchives},
      {"completions", "Print the shell completion script for bash, zsh or fish",
       [] { return std::unique_ptr<Command>(new CompletionsCommand); }, kNoPorts},
      {"help", "Show help for ezpz or one of its commands", [] { return std::unique_ptr<Command>(new HelpCommand); },
       kNoPorts},
      {"__rank-env", "Per-rank shim: set the torchrun variables from the launcher's, then exec the command",
       [] { return std::unique_ptr<Command>(new RankEnvCommand); }, kProbe | kJobs | kRanks, true, true},
      {"__doctor-node", "One node of doctor --nodes: print its facts (clock, free space, ezpz) after a ping",
       [] { return std::unique_ptr<Command>(new DoctorNodeCommand); }, kProbe, true},
      {"__yeet-relay", "One node of yeet's fan-out: extract the stream from stdin and pass it on",
       [] { return std::unique_ptr<Command>(new YeetRelayCommand); }, kTrees | kStaging | kManifests | kBroadcast, true,
       true},
      {"__yeet-send", "One push of yeet --strategy greedy: stream this node's copy to another node",
       [] { return std::unique_ptr<Command>(new YeetSendCommand); }, kBroadcast, true, true},
      {"__ssh-stdio", "The local half of a command started on another node over the built-in transport",
       [] {
         return std::unique_ptr<Command>(new TransportChildCommand(core::TransportKind::ssh, TransportHalf::local));
       },
       kTransport, true, true},
      {"__ssh-tcp", "The node half of a stream started over SSH: carries it over a sealed TCP connection it offers",
       [] {
         return std::unique_ptr<Command>(new TransportChildCommand(core::TransportKind::ssh, TransportHalf::node));
       },
       kTransport, true, true},
      {"__agent-stdio", "The local half of a command started on another node through its agent (launcher transport)",
       [] {
         return std::unique_ptr<Command>(
             new TransportChildCommand(core::TransportKind::launcher, TransportHalf::local));
       },
       kTransport, true, true},
      {"__yeet-agent", "One node's agent of yeet's launcher transport: runs relays for the run's authenticated peers",
       [] {
         return std::unique_ptr<Command>(new TransportChildCommand(core::TransportKind::launcher, TransportHalf::node));
       },
       kTransport, true, true},
      {"__self-digest", "Print this binary's SHA-256: what a node's start script checks before it runs a relay",
       [] { return std::unique_ptr<Command>(new SelfDigestCommand); }, kProbe, true, true},
      {"__yeet-janitor", "The watcher of a yeet's work beside its destination: removes it once the run has ended",
       [] { return std::unique_ptr<Command>(new WatcherCommand); }, kStaging, true, true},
  };
  return table;
}

const CommandInfo* find_command(std::string_view name) {
  for (const auto& row : command_table()) {
    if (row.name == name) {
      return &row;
    }
  }
  return nullptr;
}

}  // namespace ezpz::cli
