#include "cli/launch_report.hpp"

#include <nlohmann/json.hpp>

#include "ezpz/version.hpp"

namespace ezpz::cli {
namespace {

nlohmann::json env_object(const core::EnvList& env) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : env) {
    out[name] = value;
  }
  return out;
}

nlohmann::json optional_string(const std::string& s) {
  return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
}

nlohmann::json plan_object(const core::LaunchPlan& plan, const core::ClusterInfo& cluster) {
  return {
      {"scheduler", core::to_string(plan.scheduler)},
      {"machine", plan.machine},
      {"hosts", plan.hosts},
      {"nhosts", plan.topology.nhosts},
      {"ppn", plan.topology.ppn},
      {"nprocs", plan.topology.nprocs},
      {"gpus_per_node", cluster.gpus.per_node},
      {"gpus_source", cluster.gpus.source},
      {"ppn_limit", plan.ppn_limit.value > 0 ? nlohmann::json(plan.ppn_limit.value) : nlohmann::json(nullptr)},
      {"ppn_limit_source", optional_string(plan.ppn_limit.source)},
      {"host_source", cluster.host_source.origin},
      {"hostfile", optional_string(plan.hostfile)},
      {"launcher", plan.launcher},
      {"style", core::to_string(plan.style)},
      {"cpu_bind", optional_string(plan.cpu_bind)},
      {"argv", plan.argv},
      {"env", env_object(plan.env)},
      {"unset_env", plan.unset_env},
      {"rank_env", plan.rank_env},
      {"master_addr", optional_string(plan.rank.master_addr)},
      {"master_port", plan.rank.master_port > 0 ? nlohmann::json(plan.rank.master_port) : nlohmann::json(nullptr)},
      {"gpu_bind", core::to_string(plan.rank.gpu_bind)},
      {"label", plan.label},
      {"warnings", plan.warnings},
  };
}

}  // namespace

std::string plan_json(const core::LaunchPlan& plan, const core::ClusterInfo& cluster) {
  return plan_object(plan, cluster).dump();
}

core::EnvList local_rank_environment(const core::LaunchPlan& plan, const core::Env& env, int r) {
  core::EnvList vars = plan.env;
  if (plan.rank_env) {
    auto rank = core::rank_environment(env, plan.rank, core::planned_rank(r, plan.rank));
    vars.insert(vars.end(), rank.begin(), rank.end());
  }
  return vars;
}

std::string rank_env_report(const core::LaunchPlan& plan, const core::Env& env, bool json) {
  nlohmann::json ranks = nlohmann::json::array();
  std::string text;
  for (int r = 0; r < plan.topology.nprocs; ++r) {
    const auto info = core::planned_rank(r, plan.rank);
    const auto& host = plan.hosts.at(static_cast<std::size_t>(info.node_rank) % plan.hosts.size());
    core::EnvList vars = plan.rank_env ? core::rank_environment(env, plan.rank, info) : core::EnvList{};
    if (json) {
      ranks.push_back({{"rank", r}, {"host", host}, {"env", env_object(vars)}});
      continue;
    }
    text += "rank " + std::to_string(r) + " on " + host + ":";
    for (const auto& [name, value] : vars) {
      text += " " + name + "=" + value;
    }
    text += '\n';
  }
  return json ? ranks.dump() + "\n" : text;
}

std::string record_json(const core::LaunchPlan& plan, const core::ClusterInfo& cluster,
                        const std::vector<std::string>& command, const LaunchTimes& times,
                        const core::RunResult& result, int attempts) {
  nlohmann::json record = {
      {"ezpz_version", EZPZ_VERSION},
      {"command", command},
      {"plan", plan_object(plan, cluster)},
      {"start", times.start_iso},
      {"end", times.end_iso},
      {"duration_s", times.duration_s},
      {"exit_code", result.exit_code},
      {"attempts", attempts},
      {"timed_out", result.timed_out},
      {"signal", result.signal},
      {"failed_rank", result.failed >= 0 && plan.style == core::LauncherStyle::local ? nlohmann::json(result.failed)
                                                                                     : nlohmann::json(nullptr)},
  };
  return record.dump(2) + "\n";
}

}  // namespace ezpz::cli
