// torchrun's environment contract (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK,
// GROUP_*, ROLE_*, TORCHELASTIC_*, MASTER_ADDR, MASTER_PORT, ...) derived from whatever the
// launcher set.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/env.hpp"
#include "core/base/expected.hpp"

namespace ezpz::core {

using EnvList = std::vector<std::pair<std::string, std::string>>;

/// Which variable pins a rank to its GPU.
enum class GpuBind { none, cuda, ze, rocr };
[[nodiscard]] std::string_view to_string(GpuBind b);
[[nodiscard]] std::optional<GpuBind> gpu_bind_from_string(std::string_view s);
[[nodiscard]] std::string_view gpu_bind_variable(GpuBind b);  ///< CUDA_VISIBLE_DEVICES, ...

/// What the launching ezpz knows about the job; handed to every rank.
struct RankContext {
  int nprocs = 1;
  int ppn = 1;
  int nhosts = 1;
  std::string master_addr;  ///< empty: leave MASTER_ADDR alone
  int master_port = 0;      ///< 0: leave MASTER_PORT alone
  GpuBind gpu_bind = GpuBind::none;
  bool gpu_reverse = false;  ///< Polaris: local rank 0 gets the last GPU
  int gpus_per_node = 1;
  std::string run_id;      ///< TORCHELASTIC_RUN_ID (the job id); empty: not set
  std::string record_dir;  ///< this attempt's directory for error files and exit reports; empty: none
  int max_restarts = 0;    ///< TORCHELASTIC_MAX_RESTARTS (--retries)
  int restart_count = 0;   ///< TORCHELASTIC_RESTART_COUNT (the attempt, from 0)
  bool label = false;      ///< every output line of a rank starts with "[host rank] "
  std::string log_dir;     ///< this attempt's directory for each rank's output files; empty: none
  std::string console;     ///< the ranks whose lines show (core::parse_rank_ranges); empty: all
};

struct RankInfo {
  int rank = 0;
  int world = 1;
  int local_rank = 0;
  int local_world = 1;
  int node_rank = 0;
  std::string source;  ///< the variable the rank came from, e.g. "PMI_RANK"
  bool operator==(const RankInfo&) const = default;
};

/// The rank of this process from the launcher's variables, in ezpz's priority order:
/// rank: RANK, PMI_RANK, OMPI_COMM_WORLD_RANK, PALS_RANKID, PMIX_RANK, SLURM_PROCID;
/// local rank: LOCAL_RANK, PALS_LOCAL_RANKID, PMIX_LOCAL_RANK, PMI_LOCAL_RANK,
/// OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, MPICH_LOCALRANKID, SLURM_LOCALID, else rank % ppn.
/// Sizes fall back to the context. No rank variable with a world above 1 is a usage error.
[[nodiscard]] Expected<RankInfo> detect_rank(const Env& env, const RankContext& ctx);

/// Whether the launcher that started this rank SIGKILLs every other rank at once when one is
/// killed by a signal: MPICH's Hydra and Intel MPI's (their PMI hands each rank PMI_FD).
[[nodiscard]] bool launcher_kills_all_on_signal(const Env& env);

/// Rank `r` of the plan as the built-in launcher (or --print-env) places it: block by host.
[[nodiscard]] RankInfo planned_rank(int r, const RankContext& ctx);

/// Set in every rank's environment (MASTER_ADDR:MASTER_PORT): `ezpz kill` finds jobs by it.
inline constexpr std::string_view kJobIdVariable = "EZPZ_JOB_ID";

/// The variables to set for one rank: torchrun's whole set. Values the user exported win for
/// MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID, TORCHELASTIC_ERROR_FILE, ROLE_NAME,
/// TORCH_NCCL_ASYNC_ERROR_HANDLING and OMP_NUM_THREADS (1 when ranks share a node); the
/// numbers (RANK, GROUP_RANK, ROLE_RANK, ...) are always derived. A GPU variable already
/// holding a list is indexed by the local rank.
[[nodiscard]] EnvList rank_environment(const Env& env, const RankContext& ctx, const RankInfo& rank);

/// Variables a launcher's own environment must not pass on, so stale values from the
/// caller cannot shadow the launcher's (RANK, WORLD_SIZE, LOCAL_RANK, ...).
[[nodiscard]] const std::vector<std::string_view>& inherited_rank_variables();

/// The shim's arguments: `ezpz __rank-env ARGS -- CMD`.
[[nodiscard]] std::vector<std::string> rank_shim_args(const RankContext& ctx);

/// `argv` with the shim's arguments (between "__rank-env" and "--") replaced by those of `ctx`;
/// unchanged when argv has no shim.
[[nodiscard]] std::vector<std::string> with_shim_args(std::vector<std::string> argv, const RankContext& ctx);

/// Where rank `rank` of an attempt writes its exception (torch's @record, TORCHELASTIC_ERROR_FILE)
/// and where its shim reports a failure.
[[nodiscard]] std::string error_file_path(const std::string& record_dir, int rank);
[[nodiscard]] std::string exit_report_path(const std::string& record_dir, int rank);

}  // namespace ezpz::core
