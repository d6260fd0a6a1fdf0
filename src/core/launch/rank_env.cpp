#include "core/launch/rank_env.hpp"

#include <algorithm>

#include "core/base/strings.hpp"

namespace ezpz::core {
namespace {

/// The first of `names` that holds a non-negative integer.
std::optional<std::pair<std::string, int>> first_int(const Env& env, std::initializer_list<std::string_view> names,
                                                     bool allow_zero = true) {
  for (auto name : names) {
    auto v = env.get(name);
    if (!v) {
      continue;
    }
    if (*v == "0" && allow_zero) {
      return std::make_pair(std::string(name), 0);
    }
    if (auto n = parse_positive_int(*v)) {
      return std::make_pair(std::string(name), *n);
    }
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(GpuBind b) {
  switch (b) {
    case GpuBind::none:
      return "none";
    case GpuBind::cuda:
      return "cuda";
    case GpuBind::ze:
      return "ze";
    case GpuBind::rocr:
      return "rocr";
  }
  return "none";
}

std::optional<GpuBind> gpu_bind_from_string(std::string_view s) {
  for (auto b : {GpuBind::none, GpuBind::cuda, GpuBind::ze, GpuBind::rocr}) {
    if (to_string(b) == s) {
      return b;
    }
  }
  return std::nullopt;
}

std::string_view gpu_bind_variable(GpuBind b) {
  switch (b) {
    case GpuBind::cuda:
      return "CUDA_VISIBLE_DEVICES";
    case GpuBind::ze:
      return "ZE_AFFINITY_MASK";
    case GpuBind::rocr:
      return "ROCR_VISIBLE_DEVICES";
    case GpuBind::none:
      break;
  }
  return "";
}

bool launcher_kills_all_on_signal(const Env& env) {
  return env.get("PMI_FD").has_value();
}

Expected<RankInfo> detect_rank(const Env& env, const RankContext& ctx) {
  RankInfo info;
  auto rank = first_int(env, {"RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "PALS_RANKID", "PMIX_RANK", "SLURM_PROCID"});
  auto world = first_int(env, {"WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PALS_SIZE", "SLURM_NTASKS"}, false);
  info.world = world ? world->second : ctx.nprocs;
  if (!rank) {
    if (info.world > 1) {
      return usage_error(
          "cannot tell this process's rank: the launcher set none of RANK, PMI_RANK, OMPI_COMM_WORLD_RANK, "
          "PALS_RANKID, PMIX_RANK, SLURM_PROCID; launch through mpiexec/srun/mpirun or use --no-rank-env");
    }
    rank = std::make_pair(std::string("default"), 0);
  }
  info.rank = rank->second;
  info.source = rank->first;
  if (info.rank >= info.world) {
    return usage_error(rank->first + "=" + std::to_string(info.rank) + " is not below the world size " +
                       std::to_string(info.world) + ": the launcher's variables disagree");
  }
  auto local_world = first_int(env,
                               {"LOCAL_WORLD_SIZE", "PALS_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                "PMI_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"},
                               false);
  info.local_world = local_world ? local_world->second : std::max(1, std::min(ctx.ppn, info.world));
  auto local = first_int(env, {"LOCAL_RANK", "PALS_LOCAL_RANKID", "PMIX_LOCAL_RANK", "PMI_LOCAL_RANK",
                               "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MPICH_LOCALRANKID", "SLURM_LOCALID"});
  info.local_rank = local ? local->second : info.rank % info.local_world;
  // (Not OMPI_COMM_WORLD_NODE_RANK: Open MPI means a per-node rank across jobs, not the node's index.)
  auto node = first_int(env, {"NODE_RANK", "GROUP_RANK", "PALS_NODEID", "SLURM_NODEID"});
  info.node_rank = node ? node->second : info.rank / info.local_world;
  return info;
}

RankInfo planned_rank(int r, const RankContext& ctx) {
  const int ppn = std::max(1, ctx.ppn);
  return RankInfo{r, ctx.nprocs, r % ppn, ppn, r / ppn, "planned"};
}

EnvList rank_environment(const Env& env, const RankContext& ctx, const RankInfo& rank) {
  EnvList out = {
      {"RANK", std::to_string(rank.rank)},
      {"WORLD_SIZE", std::to_string(rank.world)},
      {"LOCAL_RANK", std::to_string(rank.local_rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(rank.local_world)},
      {"NODE_RANK", std::to_string(rank.node_rank)},
  };
  auto unless_set = [&](std::string_view name, const std::string& value) {
    if (!value.empty() && !env.has(name)) {
      out.emplace_back(name, value);
    }
  };
  unless_set("MASTER_ADDR", ctx.master_addr);
  unless_set("MASTER_PORT", ctx.master_port > 0 ? std::to_string(ctx.master_port) : "");
  // The rest of torchrun's contract (Lightning, is_torchelastic_launched(), @record key on it).
  out.insert(out.end(), {
                            {"GROUP_RANK", std::to_string(rank.node_rank)},
                            {"GROUP_WORLD_SIZE", std::to_string(std::max(1, ctx.nhosts))},
                            {"ROLE_RANK", std::to_string(rank.rank)},
                            {"ROLE_WORLD_SIZE", std::to_string(rank.world)},
                            {"TORCHELASTIC_RESTART_COUNT", std::to_string(ctx.restart_count)},
                            {"TORCHELASTIC_MAX_RESTARTS", std::to_string(ctx.max_restarts)},
                            {"TORCHELASTIC_USE_AGENT_STORE", "False"},
                        });
  unless_set("ROLE_NAME", "default");
  unless_set("TORCHELASTIC_RUN_ID", ctx.run_id);
  unless_set("TORCHELASTIC_ERROR_FILE", ctx.record_dir.empty() ? "" : error_file_path(ctx.record_dir, rank.rank));
  unless_set("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1");
  unless_set("OMP_NUM_THREADS", rank.local_world > 1 ? "1" : "");
  // Marks every process of the job (children inherit it) for `ezpz kill`: the rendezvous
  // address is the same on every rank and unique while the job runs.
  const auto addr = env.get("MASTER_ADDR").value_or(ctx.master_addr);
  const auto port = env.get("MASTER_PORT").value_or(ctx.master_port > 0 ? std::to_string(ctx.master_port) : "");
  if (!env.has(std::string(kJobIdVariable)) && !addr.empty() && !port.empty()) {
    out.emplace_back(kJobIdVariable, addr + ":" + port);
  }
  if (ctx.gpu_bind != GpuBind::none) {
    const std::string var(gpu_bind_variable(ctx.gpu_bind));
    // Devices this rank may choose from: the caller's list when set, else 0..gpus-1.
    std::vector<std::string> devices;
    if (auto visible = env.get(var)) {
      for (auto d : split(*visible, ',')) {
        if (!trim(d).empty()) {
          devices.emplace_back(trim(d));
        }
      }
    }
    if (devices.empty()) {
      for (int g = 0; g < std::max(1, ctx.gpus_per_node); ++g) {
        devices.push_back(std::to_string(g));
      }
    }
    const int n = static_cast<int>(devices.size());
    int index = rank.local_rank % n;
    if (ctx.gpu_reverse) {
      index = n - 1 - index;
    }
    out.emplace_back(var, devices[static_cast<std::size_t>(index)]);
  }
  return out;
}

const std::vector<std::string_view>& inherited_rank_variables() {
  static const std::vector<std::string_view> names = {"RANK",      "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                                      "NODE_RANK", "GROUP_RANK"};
  return names;
}

std::vector<std::string> rank_shim_args(const RankContext& ctx) {
  std::vector<std::string> args = {"--np=" + std::to_string(ctx.nprocs), "--ppn=" + std::to_string(ctx.ppn),
                                   "--nhosts=" + std::to_string(ctx.nhosts)};
  if (!ctx.master_addr.empty()) {
    args.push_back("--master-addr=" + ctx.master_addr);
  }
  if (ctx.master_port > 0) {
    args.push_back("--master-port=" + std::to_string(ctx.master_port));
  }
  if (ctx.gpu_bind != GpuBind::none) {
    args.push_back("--gpu-bind=" + std::string(to_string(ctx.gpu_bind)));
    args.push_back("--gpus=" + std::to_string(ctx.gpus_per_node));
    if (ctx.gpu_reverse) {
      args.emplace_back("--gpu-reverse");
    }
  }
  if (!ctx.run_id.empty()) {
    args.push_back("--run-id=" + ctx.run_id);
  }
  if (!ctx.record_dir.empty()) {
    args.push_back("--record-dir=" + ctx.record_dir);
  }
  args.push_back("--restart=" + std::to_string(ctx.restart_count) + "/" + std::to_string(ctx.max_restarts));
  if (ctx.label) {
    args.emplace_back("--label");
  }
  if (!ctx.log_dir.empty()) {
    args.push_back("--log-dir=" + ctx.log_dir);
  }
  if (!ctx.console.empty()) {
    args.push_back("--console-ranks=" + ctx.console);
  }
  return args;
}

std::vector<std::string> with_shim_args(std::vector<std::string> argv, const RankContext& ctx) {
  auto shim = std::find(argv.begin(), argv.end(), "__rank-env");
  if (shim == argv.end()) {
    return argv;
  }
  auto end = std::find(shim + 1, argv.end(), "--");
  auto args = rank_shim_args(ctx);
  auto at = argv.erase(shim + 1, end);
  argv.insert(at, args.begin(), args.end());
  return argv;
}

std::string error_file_path(const std::string& record_dir, int rank) {
  return record_dir + "/error-" + std::to_string(rank) + ".json";
}

std::string exit_report_path(const std::string& record_dir, int rank) {
  return record_dir + "/exit-" + std::to_string(rank) + ".json";
}

}  // namespace ezpz::core
