// Failover (--spare-nodes, --auto-retry): the job's nodes split into active and spare ones, the
// verdict on a failed attempt from facts (what each rank's shim said, what the launcher said,
// what a probe of each suspect found), and the swap of evicted nodes for spares. Never blind: a
// node is evicted only when a launcher names it or a probe of it fails.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/expected.hpp"
#include "core/job/cluster.hpp"
#include "core/job/hostlist.hpp"
#include "core/job/topology.hpp"
#include "core/launch/failure_signs.hpp"
#include "core/launch/launch_plan.hpp"

namespace ezpz::core {

/// No attempt starts that cannot run this long before the job's end (--min-attempt-time).
inline constexpr double kDefaultMinAttemptS = 120;
/// A suspect's probe answers within this, or it fails.
inline constexpr double kProbeTimeoutS = 15;

struct FailoverRequest {
  bool on = false;                 ///< --auto-retry or --spare-nodes
  std::optional<int> spares;       ///< --spare-nodes N; nullopt: auto (every node the job does not need)
  std::optional<int> max_retries;  ///< --max-failover-retries; nullopt: until the spares run out
  double min_attempt_s = kDefaultMinAttemptS;
};

/// --spare-nodes's value: "auto" (nullopt) or a count of at least 1.
[[nodiscard]] Expected<std::optional<int>> parse_spare_nodes(std::string_view text);

struct NodeSplit {
  HostList active;  ///< the nodes the launch runs on
  HostList spare;   ///< the nodes kept for a swap, in the order they are taken
};

/// The job's hosts split: the active ones are what the topology needs (--nhosts; -n at
/// `per_node` ranks a node, or --ppn's; else all but the N spares), the spares follow them. A
/// refusal names the numbers ("--spare-nodes 3 but the job has 1 node beyond the 4 that -n 16 needs").
[[nodiscard]] Expected<NodeSplit> split_nodes(const TopologyRequest& topology, const HostList& hosts, int per_node,
                                              const FailoverRequest& request);

/// The plan of one attempt on exactly `split.active`: named to the launcher (srun --nodelist; a
/// hostfile at `hostfile`, which the caller writes, for mpiexec and mpirun: LaunchPlan::
/// write_hostfile), MASTER_ADDR `master_addr` (the first active node's), the spares listed.
/// AttemptAfter::swap: srun gets --overlap, as the failed step may still hold the healthy nodes
/// (Slurm completes it only once the lost node answers or is marked down).
enum class AttemptAfter { start, swap };
[[nodiscard]] Expected<LaunchPlan> plan_on_hosts(LaunchRequest request, const Env& env, ClusterInfo cluster,
                                                 const LauncherInventory& inventory, const NodeSplit& split,
                                                 const std::string& hostfile, const std::string& master_addr,
                                                 AttemptAfter after = AttemptAfter::start);

/// What a launcher said about a node, parsed per launcher.
enum class ClaimKind {
  node_failure,   ///< srun: "Node failure on nidX"
  tasks_killed,   ///< srun: "nidX: tasks 0-3: Killed"; MPICH: "RUNNING AT nidX" with "EXIT CODE: 9"
  shepherd_died,  ///< PALS: "<host>: shepherd died from signal 9"
  rpc_child,      ///< PALS: "launch failed on A: Couldn't forward RPC launch(...) to child B" (B)
  daemon_lost,    ///< Open MPI / PRRTE: lost a remote daemon "on node B"
  unreachable,    ///< an ssh-started launcher (MPICH Hydra, Open MPI): "ssh: connect to host B port 22: ..."
};
[[nodiscard]] std::string_view to_string(ClaimKind kind);

struct LauncherClaim {
  ClaimKind kind = ClaimKind::node_failure;
  std::string host;
  std::string line;  ///< the launcher's line, as it said it
  bool operator==(const LauncherClaim&) const = default;
};

/// Every claim in a launcher's output (its stderr and stdout lines, ezpz's own excluded).
[[nodiscard]] std::vector<LauncherClaim> launcher_claims(std::string_view output);

/// Why a launcher cannot go on, from its latest lines: it could not reach a node to start its
/// daemon there (ClaimKind::unreachable), which MPICH's Hydra then waits for forever. One line
/// ("mpiexec cannot reach node3: ssh: connect to host node3 port 22: No route to host"); nullopt
/// when nothing in them says so.
[[nodiscard]] std::optional<std::string> launcher_blocked(std::string_view launcher,
                                                          const std::vector<std::string>& lines);

/// What one failed attempt left: its ranks (from their shims), the launcher's claims, and when.
struct AttemptEvidence {
  std::vector<RankWatch> ranks;       ///< every rank: host, end (exit_code -1: gone without a word)
  std::vector<LauncherClaim> claims;  ///< what the launcher said
  double ended = 0;                   ///< when the attempt ended (seconds since the epoch)
  double stopped_at = 0;              ///< when ezpz began to stop it (0: it did not): later ends are its doing
  std::optional<double> job_end;      ///< the scheduler's end of the job (epoch), when known
  FailureSign sign;                   ///< what the ranks' and the launcher's last words say (classify_failure)
};

/// A node to probe, and why.
struct Suspect {
  std::string host;
  std::string why;     ///< "the launcher says: ...", "its 2 ranks ended without a word at ..."
  bool named = false;  ///< a launcher claim names it as bad: evicted whatever its probe says
};

/// The suspects of a failed attempt, among `active`: each host a launcher claim names; each
/// host whose ranks all ended without a word (their shims killed too) before any rank reported
/// a failure, named when the launcher also says its tasks were killed; each host none of whose
/// ranks ever reported. Empty when the evidence points at no node (then every active node is
/// probed).
[[nodiscard]] std::vector<Suspect> find_suspects(const AttemptEvidence& evidence, const HostList& active);

/// What a probe of a node found.
struct ProbeResult {
  std::string host;
  bool ok = false;
  std::string why;  ///< for a failure: "no answer in 15 s", "/tmp is not writable", ...
};

/// Why an attempt failed, decided from the evidence.
enum class VerdictKind {
  bad_nodes,    ///< nodes to evict (named, or their probe failed)
  application,  ///< ranks failed on nodes that all pass their probes: the application's own failure
  walltime,     ///< the job reached its time limit: no node is to blame
  storage,      ///< a full or over-quota filesystem on nodes that pass their probes: the same nodes again
  systemic,     ///< every rank failed the same way at start-up on nodes that pass: no spare can fix it
};

struct Eviction {
  std::string host;
  std::string why;                    ///< one line: "shepherd died from signal 9 (PALS)"
  std::vector<std::string> evidence;  ///< every fact that named or pointed at it
};

struct Verdict {
  VerdictKind kind = VerdictKind::application;
  std::vector<Eviction> evicted;
};

/// The verdict: a walltime end when the attempt ended within a minute of the job's end; else
/// evict each named suspect and each whose probe failed (a probe of any active node that failed
/// counts too; with a systemic sign only those: a launcher's claim is its echo, never evidence);
/// none: storage or systemic as the sign says, else the application's failure.
[[nodiscard]] Verdict decide(const AttemptEvidence& evidence, const std::vector<Suspect>& suspects,
                             const std::vector<ProbeResult>& probes);

/// The split after evicting `evicted`: each replaced, in place, by the next spare; an Error
/// naming the nodes that failed and why when the spares run out.
[[nodiscard]] Expected<NodeSplit> swap_nodes(const NodeSplit& split, const std::vector<Eviction>& evicted);

/// "node x evicted: WHY; y takes its place (1 spare left)".
[[nodiscard]] std::string swap_line(const Eviction& eviction, const std::string& replacement, std::size_t spares_left);

/// Where a failover run's time went: from the first attempt's start to the last one's end, the
/// time in the attempt that succeeded (none: 0), the rest lost to failed attempts, probes and
/// restarts, and the share that did the work (the field's effective training time).
struct Goodput {
  double total_s = 0;
  double useful_s = 0;
  double lost_s = 0;
  double share = 0;  ///< useful / total, 0..1
};
/// `attempts`: each one's start and end (epoch seconds); `succeeded`: whether the last one did.
[[nodiscard]] Goodput goodput(const std::vector<std::pair<double, double>>& attempts, bool succeeded);
/// "goodput: 91% (120.5 s of 132.4 s in the attempt that succeeded; 11.9 s lost to failed attempts and restarts)".
[[nodiscard]] std::string goodput_line(const Goodput& g);

/// The scheduler directive that keeps a job off the nodes of a bad-nodes file (`path`, its
/// `text`: a host a line, "# ..." comments): Slurm's --exclude=a,b. PBS's qsub cannot leave
/// nodes out by name: a usage error that says what to do instead.
[[nodiscard]] Expected<std::string> exclusion_arg(bool slurm, std::string_view text, const std::string& path);

/// A PBS job's end from `qstat -f JOBID`: its start (`stime = Fri Nov 27 18:00:00 2026`, the
/// server's local time, as this host reads it) plus `Resource_List.walltime = HH:MM:SS`.
[[nodiscard]] std::optional<double> pbs_end_time(std::string_view qstat_f);

/// The scheduler's end of the job (seconds since the epoch): EZPZ_JOB_END_TIME where the job
/// script sets it, else SLURM_JOB_END_TIME (PBS has no variable for it: pbs_end_time).
[[nodiscard]] std::optional<double> job_end_time(const std::optional<std::string>& slurm_end,
                                                 const std::optional<std::string>& ezpz_end);

}  // namespace ezpz::core
