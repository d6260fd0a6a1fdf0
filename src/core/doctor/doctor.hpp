// ezpz doctor: the checks' decisions as pure functions of the Env snapshot, what the probe
// sees, and what the nodes and the launcher answered. cli/doctor runs them concurrently.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/env.hpp"
#include "core/job/cluster.hpp"
#include "core/ports/probe.hpp"
#include "core/reach/transport.hpp"

namespace ezpz::core {

enum class CheckStatus { ok, warning, error };
[[nodiscard]] std::string_view to_string(CheckStatus s);

/// One finding: a one-line message, and a remedy when it is not ok.
struct CheckResult {
  std::string name;
  CheckStatus status = CheckStatus::ok;
  std::string message;
  std::string remedy;
  std::string host;  ///< set for per-node findings
  double duration_ms = 0;
};
[[nodiscard]] CheckResult check_ok(std::string name, std::string message);
[[nodiscard]] CheckResult check_warning(std::string name, std::string message, std::string remedy);
[[nodiscard]] CheckResult check_error(std::string name, std::string message, std::string remedy);

/// How many checks ended ok, with a warning, failed.
struct DoctorSummary {
  int ok = 0;
  int warnings = 0;
  int failed = 0;
};
[[nodiscard]] DoctorSummary summarize_checks(const std::vector<CheckResult>& results);
/// "9 ok, 2 warnings, 0 failed": doctor's last line.
[[nodiscard]] std::string summary_line(const DoctorSummary& s);

/// 1 when any check is an error, else 0.
[[nodiscard]] int doctor_exit_code(const std::vector<CheckResult>& results);
/// `{"summary": {ok, warnings, failed}, "checks": [{name, status, message, remedy, host?,
/// duration_ms}]}` on one line.
[[nodiscard]] std::string doctor_json(const std::vector<CheckResult>& results);
/// `[ OK ] name: message` (`[WARN]`, `[FAIL]`) and `       -> remedy`, a host in parentheses.
/// Per-node results that are ok are left out unless `all`. Ends with the summary line.
[[nodiscard]] std::string doctor_text(const std::vector<CheckResult>& results, bool color, bool all);

// ------------------------------------------------------------------ mounts
struct Mount {
  std::string device;
  std::string point;
  std::string type;
};
/// /proc/mounts text (octal escapes such as \040 decoded).
[[nodiscard]] std::vector<Mount> parse_mounts(std::string_view text);
/// The mount holding `path` (longest matching mount point, the last one mounted wins).
[[nodiscard]] std::optional<Mount> mount_of(const std::vector<Mount>& mounts, std::string_view path);
/// NFS, Lustre, GPFS, BeeGFS, CephFS, Cray DVS, ...: a filesystem every node reads over the network.
[[nodiscard]] bool is_shared_fs(std::string_view type);

// ------------------------------------------------------------------ local tier
/// What several local checks share, gathered once: machine profiles, the job's hosts, mounts.
struct LocalFacts {
  std::optional<MachineSet> machines;
  std::string machines_error;
  std::optional<ClusterInfo> cluster;
  std::string cluster_error;
  std::vector<Mount> mounts;
  std::optional<std::string> hostfile;  ///< --hostfile
  std::string version;                  ///< this ezpz's version
};
[[nodiscard]] LocalFacts gather_local_facts(const Env& env, const SystemProbe& probe,
                                            const std::optional<std::string>& hostfile,
                                            const std::optional<std::string>& machine, std::string version);

/// The active env: $VIRTUAL_ENV, else $CONDA_PREFIX; nullopt when neither is set.
[[nodiscard]] std::optional<std::string> active_env(const Env& env);

[[nodiscard]] CheckResult check_scheduler(const Env& env, const FileProbe& probe, const LocalFacts& facts);
[[nodiscard]] CheckResult check_machine(const Env& env, const LocalFacts& facts);
[[nodiscard]] CheckResult check_launcher(const Env& env, const SystemProbe& probe, const LocalFacts& facts);
[[nodiscard]] CheckResult check_python(const Env& env, const SystemProbe& probe, const LocalFacts& facts);
[[nodiscard]] CheckResult check_space(const Env& env, const FileProbe& probe);
[[nodiscard]] CheckResult check_ulimits(const HostProbe& probe, const LocalFacts& facts);
/// W&B credentials (WANDB_API_KEY, ~/.netrc, offline): nothing to check where wandb is not installed.
[[nodiscard]] CheckResult check_wandb(const Env& env, const SystemProbe& probe);
/// `import torch` in the python3 the ranks run (PATH's), within 30 s; which python was asked.
/// The answer is kept while the python and its sys.path are unchanged (python_answers.hpp).
[[nodiscard]] CheckResult check_torch(const Env& env, const SystemProbe& probe);
[[nodiscard]] CheckResult check_accelerators(const Env& env, const FileProbe& probe, const LocalFacts& facts);
[[nodiscard]] CheckResult check_network_env(const Env& env, const FileProbe& probe, const LocalFacts& facts);
[[nodiscard]] CheckResult check_ezpz(const Env& env, const LocalFacts& facts);
/// A static binary cannot load NSS modules (sssd, LDAP): a user missing from /etc/passwd is
/// unknown to it, so USER and HOME must be set (ezpz takes them first).
[[nodiscard]] CheckResult check_user(const Env& env, std::string_view passwd, std::string_view nsswitch);

// Traps sites have written down (doctor_site.cpp).
/// The collective library's network plugin the machine's fast path needs (its profile's
/// net_plugin) on LD_LIBRARY_PATH, or NCCL_NET_PLUGIN's: without it NCCL falls back to TCP silently.
[[nodiscard]] CheckResult check_net_plugin(const Env& env, const FileProbe& probe, const LocalFacts& facts);
/// An empty MODULEPATH on a machine whose profile says its software comes as modules.
[[nodiscard]] CheckResult check_modules(const Env& env, const LocalFacts& facts);
/// MPICH_GPU_SUPPORT_ENABLED=1 without a GTL library preloaded (every rank aborts at MPI init).
[[nodiscard]] CheckResult check_gpu_mpi(const Env& env, const FileProbe& probe);
/// A munge socket whose daemon is gone (Open MPI's mpirun waits in PMIx's munge plugin).
[[nodiscard]] CheckResult check_munge(const HostProbe& probe);
/// Whether the job outlives a node's failure (what --spare-nodes needs), as its scheduler says.
[[nodiscard]] CheckResult check_failover(const Env& env, const SystemProbe& probe);

/// One check of this host, as `ezpz doctor` runs them (each on a thread of its own, in this order).
struct LocalCheck {
  std::string_view name;
  CheckResult (*run)(const Env& env, const SystemProbe& probe, const LocalFacts& facts);
};
/// Every check of this host: a new check is its function and its row here (doctor_local.cpp).
[[nodiscard]] const std::vector<LocalCheck>& local_checks();

/// A launcher's `--version` text -> "Open MPI 4.1.4", "MPICH 4.0.2", "Intel MPI 2021.9",
/// "Cray PALS 1.2.12", "Slurm 23.02.7"; empty when unrecognised.
[[nodiscard]] std::string launcher_flavour(std::string_view version_text);

// ------------------------------------------------------------------ per-node tier
/// What `ezpz __doctor-node` prints after the ping: one JSON line.
struct NodeFacts {
  std::string hostname;
  long long time_ns = 0;  ///< its wall clock when it answered
  std::string dst;        ///< the directory whose filesystem was measured
  unsigned long long dst_free = 0;
  std::string version;
  bool exe_present = false;  ///< ezpz is at the head's path on that node
  bool exe_same = false;     ///< ... and it is the binary that answered (the head's, by SHA-256)
};
[[nodiscard]] std::string encode_node_facts(const NodeFacts& f);
[[nodiscard]] std::optional<NodeFacts> decode_node_facts(std::string_view line);

/// The nearest existing directory at or above `path` (whose filesystem a copy there would use).
[[nodiscard]] std::string existing_ancestor(const std::string& path, const FileProbe& probe);

struct NodeTierOptions {
  std::string version;                 ///< this ezpz's version
  std::string exe;                     ///< this ezpz's path (launch's rank shim runs it on every node)
  std::string dst;                     ///< the yeet destination whose free space counts
  unsigned long long need_bytes = 0;   ///< the active env's size (0: unknown)
  double skew_warning_ms = 1000;       ///< clock skew that is a warning
  double skew_error_ms = 60000;        ///< ... and an error
  std::string transport = "built-in";  ///< how the nodes were reached, for messages
  int timeout_s = 10;                  ///< how long each node had (--timeout), for messages
};
/// One result per host (name "node") and summaries: "nodes" (reachable, round trips), "clock",
/// "node-space", "ezpz-version"; failing hosts are named.
[[nodiscard]] std::vector<CheckResult> node_checks(const std::vector<NodeReply>& replies,
                                                   const NodeTierOptions& options);

/// Once --nodes found the same ezpz at this binary's path on every host, the local "ezpz"
/// check's "not on a shared filesystem" warning has its answer: it becomes ok, saying so.
void settle_ezpz_check(std::vector<CheckResult>& results);

// ------------------------------------------------------------------ launch probe
/// The line each rank of the launch probe prints (`ezpz __doctor-node --rank-env`).
inline constexpr std::string_view kRankLinePrefix = "EZPZ-RANK ";
[[nodiscard]] std::string encode_rank_line(const Env& env);

struct LaunchProbeOutcome {
  std::string launcher;  ///< "mpiexec (mpich)", "built-in"
  HostList hosts;        ///< hosts the plan runs one rank each on
  ProgramOutput output;  ///< what the launcher printed (all ranks)
  double seconds = 0;
  std::string start_error;  ///< the launch could not be planned or started
};
[[nodiscard]] CheckResult launch_check(const LaunchProbeOutcome& outcome);

}  // namespace ezpz::core
