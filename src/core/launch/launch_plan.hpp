// plan_launch: the launcher command line for this job, as plain data.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/job/cluster.hpp"
#include "core/job/topology.hpp"
#include "core/launch/rank_env.hpp"

namespace ezpz::core {

/// What the user asked for on the command line.
struct LaunchRequest {
  TopologyRequest topology;
  std::optional<std::string> hostfile;     ///< --hostfile
  std::optional<std::string> machine;      ///< --machine
  std::optional<std::string> launcher;     ///< --launcher: mpiexec, mpirun, srun or local
  std::optional<std::string> cpu_bind;     ///< --cpu-bind
  std::vector<std::string> launcher_args;  ///< unknown flags before "--", verbatim
  std::vector<std::string> command;        ///< everything after "--", never reinterpreted
  bool rank_env = true;                    ///< insert the per-rank shim (--no-rank-env: false)
  std::optional<std::string> gpu_bind;     ///< --gpu-bind: auto, cuda, ze, rocr or none
  bool label = false;                      ///< --label: prefix output lines with "[host rank] "
  bool omp_notice = true;                  ///< note OMP_NUM_THREADS=1 (config: [launch] omp_notice)
  std::optional<std::string> log_dir;      ///< --log-dir: each rank's output files (default: the record directory)
  std::string console;                     ///< --console-ranks, normalized ("0-3,8"); "": every rank
  std::optional<double> start_timeout_s;   ///< --start-timeout (default: the machine's start_timeout)
  // What the caller decided for this launch (not flags):
  std::string run_id;      ///< TORCHELASTIC_RUN_ID: the job id
  std::string record_dir;  ///< the launch's record directory (error files, failure reports); "" = none
  int max_restarts = 0;    ///< --retries
  bool pin_hosts = false;  ///< run on exactly the cluster's hosts, named to the launcher (failover's active set)
};

/// An MPI program found on PATH, with its flag dialect.
struct LauncherProgram {
  std::string name;                 ///< as written in argv[0]: "mpiexec", "mpirun", "srun"
  std::optional<std::string> path;  ///< where PATH has it; nullopt when missing
  LauncherStyle style = LauncherStyle::auto_detect;
};

/// Programs the planner may pick, found by the caller (sys) before planning.
struct LauncherInventory {
  std::optional<LauncherProgram> mpiexec;
  std::optional<LauncherProgram> mpirun;
  std::optional<LauncherProgram> srun;
};

struct LaunchPlan {
  Scheduler scheduler = Scheduler::local;
  std::string machine;
  HostList hosts;        ///< the hosts this job runs on
  std::string hostfile;  ///< the file given to the launcher; empty when none
  Topology topology;
  PpnLimit ppn_limit;    ///< what the allocation allows per node by default (Slurm), value 0 when nothing
  std::string launcher;  ///< "mpiexec", "mpirun", "srun" or "local" (ezpz's own)
  LauncherStyle style = LauncherStyle::local;
  std::string cpu_bind;
  /// The command to execute. With the built-in local launcher, the command each rank runs.
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;  ///< what ezpz adds to the environment
  std::vector<std::string> unset_env;                    ///< what ezpz removes from the launcher's environment
  RankContext rank;      ///< what each rank is told (world, master address and port, GPU binding)
  bool rank_env = true;  ///< ranks get RANK, WORLD_SIZE, ... (the shim, or the built-in launcher)
  bool label = false;
  std::vector<std::string> warnings;
  std::vector<std::string> notes;  ///< said once on stderr when the job runs (not by dry runs)
  bool write_hostfile = false;     ///< ezpz writes `hosts` to `hostfile` before the launch (failover's active set)
  HostList spare_hosts;            ///< failover: the job's hosts kept out of the launch for a swap
  double start_timeout_s = 30;     ///< no rank started this long after the launcher: say why, stop (0: never)
};

/// Which program to run and its dialect (before topology is known).
struct LauncherChoice {
  std::string program;  ///< "local" for the built-in launcher
  LauncherStyle style = LauncherStyle::local;
  std::optional<std::string> warning;
};
[[nodiscard]] Expected<LauncherChoice> choose_launcher(const LaunchRequest& request, const ClusterInfo& cluster,
                                                       const LauncherInventory& inventory);

[[nodiscard]] Expected<LaunchPlan> plan_launch(const LaunchRequest& request, const Env& env, const ClusterInfo& cluster,
                                               const LauncherInventory& inventory);

/// Processes per node when the user does not say: GPUs per node, within what a Slurm allocation
/// allows (its tasks and CPUs per node) unless `style` is the built-in launcher's (this host only).
[[nodiscard]] int default_ppn(const ClusterInfo& cluster, LauncherStyle style);

/// The plan for attempt `attempt` (0 = the first) of --retries: TORCHELASTIC_RESTART_COUNT, and
/// a record directory of its own (<dir>/retry-K) so that reports of earlier attempts never count.
[[nodiscard]] LaunchPlan plan_for_attempt(const LaunchPlan& plan, int attempt);

/// The environment of rank `r` under the built-in launcher: the plan's variables, then the
/// rank's (torchrun's set) unless --no-rank-env.
[[nodiscard]] EnvList local_rank_environment(const LaunchPlan& plan, const Env& env, int r);

}  // namespace ezpz::core

namespace ezpz::core {

/// mpiexec, mpirun and srun as found on PATH, with their dialects; with `only` (--launcher),
/// that one alone (none for local): the others would not be looked at.
[[nodiscard]] LauncherInventory find_launchers(const SystemProbe& probe,
                                               const std::optional<std::string>& only = std::nullopt);

}  // namespace ezpz::core
