// What `ezpz yeet` says about a run: one report struct, printed as the plan (before the work and
// for --dry-run), as the final text report, or as the --json object.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/yeet/manifest.hpp"
#include "core/yeet/node_plan.hpp"
#include "core/yeet/outcome.hpp"
#include "core/yeet/plan.hpp"
#include "core/yeet/stream_wire.hpp"
#include "core/yeet/transfer.hpp"
#include "core/yeet/venv_patch.hpp"

namespace ezpz::cli {

struct YeetReport {
  // The plan.
  std::string host;  ///< this node
  core::YeetPlan plan;
  core::BroadcastPlan nodes;
  core::TreeStats size;  ///< the source, measured
  bool dry_run = false;
  // Incremental: what the other nodes get.
  bool delta = false;       ///< a bundle of what changed (else everything)
  std::string full_reason;  ///< why everything, when not a delta
  bool estimate_tried = false;
  std::optional<core::ChangeEstimate> estimate;  ///< --dry-run: what changed since the last yeet
  std::optional<std::string> manifest_digest;    ///< the new copy's manifest (when there are other nodes)
  std::optional<core::BundleStats> bundle;       ///< the delta that was sent
  std::vector<std::pair<std::string, std::string>> full_copies;
  // What happened (after the run).
  bool ran = false;
  core::EnvKind env_kind = core::EnvKind::none;
  std::vector<std::pair<std::string, double>> steps;  ///< ("copy_s", 1.2), ... in order
  double seconds = 0;
  core::TreeStats copied;
  core::PatchReport patch;
  core::StreamStats stream;
  std::vector<core::NodeResult> remote;
  core::Tally tally;
  std::string sentinel;  ///< the file listing failed nodes when the threshold held
};

/// "1.2"
[[nodiscard]] std::string fixed1(double v);
/// "  left out: 412 __pycache__ directories (3210 files, 131.0 MB; FLAG keeps them)\n" from a
/// measured source; nothing when the excludes left nothing out. yeet and tar-env say it alike.
[[nodiscard]] std::string left_out(const core::TreeStats& size, const std::vector<std::string>& names,
                                   std::string_view flag);
[[nodiscard]] nlohmann::json left_out_json(const core::TreeStats& size, const std::vector<std::string>& names);

/// The lines printed before the work starts (and all of --dry-run's but its last line).
void print_plan(std::ostream& out, const YeetReport& r);

/// The per-node lines, the totals and how to use the copy.
void print_yeet_report(std::ostream& out, const YeetReport& r);

/// The --json object (the plan's fields; once it ran, what happened too).
[[nodiscard]] nlohmann::json to_json(const YeetReport& r);

}  // namespace ezpz::cli
