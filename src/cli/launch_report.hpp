// What `ezpz launch` prints and records: the plan as JSON, the per-rank environment,
// and the JSON record of a finished launch.
#pragma once

#include <string>
#include <vector>

#include "core/launch_plan.hpp"
#include "core/process.hpp"

namespace ezpz::cli {

/// The `--dry-run --json` object (docs/launch.md), on one line.
[[nodiscard]] std::string plan_json(const core::LaunchPlan& plan, const core::ClusterInfo& cluster);

/// The per-rank variables for every rank (`--print-env`), as text or as a JSON array.
[[nodiscard]] std::string rank_env_report(const core::LaunchPlan& plan, const core::Env& env, bool json);

/// The environment of rank `r` under the built-in launcher: plan env + rank variables.
[[nodiscard]] core::EnvList local_rank_environment(const core::LaunchPlan& plan, const core::Env& env, int r);

struct LaunchTimes {
  std::string start_iso;  ///< 2026-11-22T00:34:18.123Z
  std::string end_iso;
  double duration_s = 0;
};

/// The record written under ~/.ezpz/jobs/<job>/ after a launch.
[[nodiscard]] std::string record_json(const core::LaunchPlan& plan, const core::ClusterInfo& cluster,
                                      const std::vector<std::string>& command, const LaunchTimes& times,
                                      const core::RunResult& result, int attempts);

}  // namespace ezpz::cli
