// What `ezpz launch` prints and records: the plan as JSON, the per-rank environment,
// and the JSON record of a finished launch.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cli/command.hpp"
#include "cli/launch.hpp"
#include "core/launch/failure.hpp"
#include "core/launch/launch_plan.hpp"
#include "core/ports/process.hpp"

namespace ezpz::cli {

/// The `--dry-run --json` object (docs/launch.md), on one line.
[[nodiscard]] std::string plan_json(const core::LaunchPlan& plan, const core::ClusterInfo& cluster,
                                    const core::Env& env);

/// `--dry-run`'s line: what runs, shell-quoted, with the variables ezpz adds in front (the
/// built-in launcher: the equivalent `ezpz launch --launcher local` command).
/// `folded`: for a person at a terminal, the same words on three lines joined by ` \\`
/// (the launcher's part, the rank shim's, then `-- COMMAND`), which a shell still runs as one.
[[nodiscard]] std::string dry_run_line(const core::LaunchPlan& plan, bool folded = false);

enum class Format { text, json };
/// The per-rank variables for every rank (`--print-env`), as text or as a JSON array (one line,
/// without its newline).
[[nodiscard]] std::string rank_env_report(const core::LaunchPlan& plan, const core::Env& env, Format format);

struct LaunchTimes {
  std::string start_iso;  ///< 2026-11-22T00:34:18.123Z
  std::string end_iso;
  double duration_s = 0;
};

/// The record written under ~/.ezpz/jobs/<job>/ after a launch (its keys in name order; what
/// add_rank_hosts and add_failover add follows), to be dumped once.
[[nodiscard]] nlohmann::ordered_json record_object(const core::LaunchPlan& plan, const core::ClusterInfo& cluster,
                                                   const std::vector<std::string>& command, const LaunchTimes& times,
                                                   const core::RunResult& result, int attempts,
                                                   const std::optional<core::FirstFailure>& failure);

/// The failed rank that ended first, with the exception its @record main left: from the built-in
/// launcher's result, else from the shims' reports in the attempt's record directory. `started`:
/// when the attempt started (seconds since the epoch).
[[nodiscard]] std::optional<core::FirstFailure> find_first_failure(Context& ctx, const core::LaunchPlan& plan,
                                                                   const core::RunResult& result, double started,
                                                                   const AttemptFacts& facts);

/// Adds "rank_hosts": for each attempt, the host of each rank ("" where no rank said).
void add_rank_hosts(nlohmann::ordered_json& record, const core::LaunchPlan& plan,
                    const std::vector<AttemptFacts>& facts);

/// Adds "failover": the spares, each attempt's nodes, verdict and evictions.
void add_failover(nlohmann::ordered_json& record, const core::NodeSplit& split, const std::vector<AttemptFacts>& facts,
                  const std::string& bad_nodes_file);

/// The one summary of a failed job on stderr, under every launcher: "error: job failed: WHAT";
/// for an attempt of a failover (`attempt` > 0) a warning, "attempt N failed: WHAT" (whether the
/// job failed is said at its end). Returns WHAT.
std::string report_failure(Context& ctx, const core::LaunchPlan& plan, const core::RunResult& result,
                           const std::optional<core::FirstFailure>& failure, double started, int attempt = 0);

}  // namespace ezpz::cli
