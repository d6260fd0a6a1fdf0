// What `ezpz yeet` prints when a transfer is done: the text report (the JSON summary is built
// in yeet.cpp).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/broadcast.hpp"
#include "core/manifest.hpp"
#include "core/transfer.hpp"
#include "core/venv_patch.hpp"
#include "core/yeet_plan.hpp"

namespace ezpz::cli {

/// Everything the text report shows, gathered by the run.
struct YeetOutcome {
  std::string host;  ///< this node
  const core::YeetPlan& plan;
  core::EnvKind env_kind;
  double seconds;
  const nlohmann::ordered_json& steps;  ///< "copy_s": 1.2, ...
  const core::TreeStats& copied;
  const core::PatchReport& patch;
  bool delta;  ///< other nodes got a bundle of what changed
  const core::BundleStats& bundle;
  const core::StreamStats& stream;
  const std::vector<core::NodeResult>& remote;
  const std::vector<std::string>& failed;
  int succeeded;
  int total_nodes;
  bool threshold_met;
  std::string sentinel;  ///< the file listing failed nodes when the threshold held
};

/// "1.2"
[[nodiscard]] std::string fixed1(double v);

/// The per-node lines, the totals and how to use the copy.
void print_yeet_report(std::ostream& out, const YeetOutcome& o);

}  // namespace ezpz::cli
