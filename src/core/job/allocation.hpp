// What the job's allocation allows on each node: GPUs it can see (visibility variables,
// the Intel device hierarchy, Slurm's GPU counts) and processes srun will start (Slurm's
// tasks and CPUs per node). Pure: the Env snapshot in, numbers and their sources out.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/base/env.hpp"

namespace ezpz::core {

/// Devices a CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES list leaves
/// visible: its entries up to the first that is not an index or a GPU-/MIG- identifier
/// (the runtimes ignore the rest: "0,1,-1,2" is 2 devices).
[[nodiscard]] int count_visible_devices(std::string_view list);

/// Devices a ZE_AFFINITY_MASK leaves visible: one per entry ("0,1.1" is 2), and in COMPOSITE
/// mode one per distinct card ("0.0,0.1" is card 0 with both tiles: 1 device).
[[nodiscard]] int count_ze_mask(std::string_view mask, bool composite);

/// A Slurm GPU count: "4", "gpu:4", "a100:4", "gpu:a100:4" or a list of these ("a100:2,v100:1"
/// is 3). nullopt when it is not one.
[[nodiscard]] std::optional<int> parse_slurm_gpus(std::string_view value);

/// The fewest per node in a Slurm per-node list: "64(x2),32" is 32. nullopt when malformed.
[[nodiscard]] std::optional<int> slurm_per_node_min(std::string_view value);

/// Tiles per GPU card of a machine whose profile counts tiles (Aurora, SunSpot: 2); else 1.
[[nodiscard]] int tiles_per_gpu(std::string_view machine);

/// The Slurm allocation's limits on processes per node, for srun.
struct SlurmTasks {
  std::optional<int> ntasks_per_node;  ///< SLURM_NTASKS_PER_NODE (the job's --ntasks-per-node)
  std::optional<int> cpus_per_node;    ///< the fewest CPUs the job has on any node (SLURM_JOB_CPUS_PER_NODE)
  std::string cpus_text;               ///< SLURM_JOB_CPUS_PER_NODE as Slurm wrote it
  int cpus_per_task = 1;               ///< SLURM_CPUS_PER_TASK
  bool cpus_per_task_set = false;      ///< the job asked for it (--cpus-per-task)
  bool overcommit = false;             ///< SLURM_OVERCOMMIT (salloc/sbatch -O): srun ignores the CPUs

  /// The most processes per node srun starts in this allocation without --overcommit
  /// (cpus_per_node / cpus_per_task); nullopt when unknown or overcommitted.
  [[nodiscard]] std::optional<int> cpu_limit() const;
};

/// srun's -c for `ppn` ranks a node, and where it comes from: the job's own --cpus-per-task
/// (srun 22.05 to 23.02 does not inherit it), else the machine's CPUs per node (no more than
/// the job has there), else the job's, shared among the ranks. nullopt when that is one CPU or
/// nothing says (srun's default).
struct CpusPerTask {
  int value = 0;
  std::string source;  ///< "SLURM_CPUS_PER_TASK", "machine profile" or "SLURM_JOB_CPUS_PER_NODE"
};
[[nodiscard]] std::optional<CpusPerTask> srun_cpus_per_task(const SlurmTasks& tasks, int profile_cpus_per_node,
                                                            int ppn);

/// Read from the Slurm variables of the job; every field empty outside one.
[[nodiscard]] SlurmTasks slurm_tasks(const Env& env);

/// A limit on the processes per node that a plan does not exceed unless asked to.
struct PpnLimit {
  int value = 0;       ///< 0 = no limit
  std::string source;  ///< "SLURM_NTASKS_PER_NODE" or "SLURM_JOB_CPUS_PER_NODE"
  std::string detail;  ///< for people: "SLURM_NTASKS_PER_NODE=1"
};

/// The tighter of the job's --ntasks-per-node and the CPUs srun may use per node.
[[nodiscard]] PpnLimit slurm_ppn_limit(const SlurmTasks& tasks);

}  // namespace ezpz::core
