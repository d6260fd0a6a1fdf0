// yeet's launcher transport, planned as data: which transport a run uses and why, the launcher
// step that starts one agent (`ezpz __yeet-agent`) on every target node, and the small texts
// the head, the agents and their clients exchange (sys/agents moves and seals the bytes).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/expected.hpp"
#include "core/launch/job_stop.hpp"
#include "core/launch/launch_plan.hpp"
#include "core/reach/spec.hpp"
#include "core/reach/targets.hpp"

namespace ezpz::core {

/// --transport: ssh, launcher or auto (the default).
enum class TransportRequest { ssh, launcher, automatic };
[[nodiscard]] std::optional<TransportRequest> transport_request_from_string(std::string_view name);

/// The transport asked for and what asked ("--transport launcher", "--ssh-command",
/// "transport = \"ssh\" in /home/me/.config/ezpz/config.toml"; "" when nothing did).
struct TransportAsk {
  /// Who asked: the command line, or the config file (a site default: moot where there is no other node).
  enum class Asker { command, config };
  TransportAsk(TransportRequest r = TransportRequest::automatic, std::string by = "",  // NOLINT: from a request
               Asker who = Asker::command)
      : request(r), origin(std::move(by)), configured(who == Asker::config) {}
  TransportRequest request;
  std::string origin;
  bool configured;  ///< the config file asked
};

/// The transport a run uses, the launcher that starts the agents (with it), and why: printed
/// and in --json.
struct TransportChoice {
  TransportKind kind = TransportKind::ssh;
  LauncherChoice launcher;  ///< program and dialect (the launcher transport)
  std::string why;
};

/// auto: the launcher inside a PBS or Slurm job whose launcher is on PATH, SSH otherwise.
/// `launcher` asked where there is none: a usage error naming the fix.
[[nodiscard]] Expected<TransportChoice> choose_transport(const TransportAsk& ask, const ClusterInfo& cluster,
                                                         const LauncherInventory& inventory);

/// How a run reaches the job's other nodes: the targets, the transport and why, and with the
/// launcher transport the step that starts the agents and the name they dial back.
struct NodeReach {
  HostList targets;
  TransportChoice choice;
  std::vector<std::string> agent_step;
  std::string agent_head;
  /// Nodes of the job its scheduler has down (Slurm's sinfo, PBS's pbsnodes): left out of
  /// `targets` where the transport names its nodes (srun, ssh), so the others are reached.
  std::vector<NodeDown> down;
};
/// The job's other hosts, as yeet, `kill --all-nodes` and `doctor --nodes` reach them (the hosts
/// discover_cluster finds, `hostfile` when not empty, through reach_targets: this node left out,
/// deduplicated; <host>-hsn0 names with SSH where `hsn` prefers them: the agents say their own
/// addresses otherwise), and the transport `request` gives there.
/// DownNodes::leave_out: the job's scheduler is asked which targets are down (NodeReach::down).
[[nodiscard]] Expected<NodeReach> plan_reach(const Env& env, const SystemProbe& probe, const std::string& hostfile,
                                             HsnNames hsn, const TransportAsk& ask, DownNodes down = DownNodes::keep);
/// The same for a cluster already discovered (doctor's).
[[nodiscard]] Expected<NodeReach> reach_from(const ClusterInfo& cluster, const Env& env, const SystemProbe& probe,
                                             HsnNames hsn, const TransportAsk& ask, DownNodes down = DownNodes::keep);
/// What is asked, first of: --transport launcher or ssh, an --ssh-command (ssh), --transport
/// auto, the config file's [yeet] transport, else auto ("" `transport`: not given).
[[nodiscard]] Expected<TransportAsk> transport_request(const std::string& transport, const std::string& ssh_command,
                                                       const Env& env, const SystemProbe& probe);

/// The variables the launcher carries to every agent (the environment, never a command line):
/// the run's secret (hex) and where the head listens ("address:port").
inline constexpr std::string_view kSecretVar = "EZPZ_YEET_SECRET";
inline constexpr std::string_view kHeadVar = "EZPZ_YEET_HEAD";
/// What an agent gives the ezpz it starts: every agent's address by node name (encode_directory).
inline constexpr std::string_view kDirectoryVar = "EZPZ_YEET_AGENTS";
/// The hidden rows: the agent on every node, and the local half of a connection to one.
inline constexpr std::string_view kAgentRow = "__yeet-agent";
inline constexpr std::string_view kAgentStdioRow = "__agent-stdio";

/// Where srun --bcast puts the agents' copy of this binary (as slurm_bcast_JOB.STEP_NODE).
inline constexpr std::string_view kBcastDir = "/tmp/";
inline constexpr std::string_view kBcastPrefix = "slurm_bcast_";

/// The one launcher step that starts an agent on each of `hosts` (one per node): srun
/// --overlap with --nodelist; mpiexec (PALS, MPICH) or mpirun (Open MPI) with `hostfile` (the
/// hosts, one per line). srun ships the binary when `ship` (--bcast); the MPI launchers need it
/// at the same path on every node (a shared filesystem). Open MPI is told to carry kSecretVar and
/// kHeadVar by name (-x), and as root to allow it; the others carry the whole environment.
struct AgentStepOptions {
  bool as_root = false;  ///< ezpz runs as root (Open MPI refuses root unless told)
  bool ship = false;     ///< srun copies this binary to each node first (--bcast)
};
[[nodiscard]] std::vector<std::string> agent_step_argv(const LauncherChoice& launcher, const HostList& hosts,
                                                       const std::string& hostfile, const std::string& exe,
                                                       AgentStepOptions options = {});

/// Agents by node name: "node1=10.0.0.1:4242,node2=..." (node names hold no "=,").
using AgentDirectory = std::map<std::string, std::string>;
[[nodiscard]] std::string encode_directory(const AgentDirectory& directory);
[[nodiscard]] Expected<AgentDirectory> decode_directory(std::string_view text);

/// Which target an agent that calls itself `names` (its Slurm node name, its host name) is:
/// the first target equal to one of them, or with the same short name; nullopt when none is.
[[nodiscard]] std::optional<std::string> match_agent(const std::vector<std::string>& names, const HostList& targets);

/// The hidden rows an agent runs for a client: a relay, a sender, a node's doctor or kill
/// (nothing else: no shell, no other command).
[[nodiscard]] bool agent_may_run(const std::vector<std::string>& args);

}  // namespace ezpz::core
