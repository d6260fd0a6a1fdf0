// How each node's copy ended, as relays report it upstream, and the rule that says whether a
// yeet succeeded.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/expected.hpp"

namespace ezpz::core {

/// How a node's copy ended.
enum class NodeOutcome {
  ok,               ///< it has the copy
  repaired,         ///< it has the copy, sent again after the pass (`repaired_from`)
  failed,           ///< it does not (`error` says why)
  needs_full_copy,  ///< the delta could not update its copy (it missed the last yeet, or was edited by hand)
  orphaned,         ///< its relay failed before it reported
};
[[nodiscard]] std::string_view to_string(NodeOutcome o);
[[nodiscard]] std::optional<NodeOutcome> parse_node_outcome(std::string_view text);

/// One node's outcome, as a relay reports it upstream (one JSON line per node).
/// How long each step of a node's work took, in order: ("open_s", 0.01), ("stream_s", 0.2), ...
using StepTimes = std::vector<std::pair<std::string, double>>;

struct NodeResult {
  std::string host;
  NodeOutcome outcome = NodeOutcome::failed;
  [[nodiscard]] bool ok() const { return outcome == NodeOutcome::ok || outcome == NodeOutcome::repaired; }
  double seconds = 0;
  unsigned long long bytes = 0;  ///< stream bytes received
  bool digest_ok = false;
  std::string error;          ///< what went wrong (failed, needs_full_copy, orphaned)
  std::string repaired_from;  ///< set by the head when a peer (or the head) re-sent it after the pass
  std::string reattached_to;  ///< the node that fed it after its relay's parent failed mid-stream
  StepTimes steps;            ///< the relay's own steps (open, stream, check, clone, apply, verify, swap)
};
[[nodiscard]] std::string encode_result(const NodeResult& r);
[[nodiscard]] std::optional<NodeResult> decode_result(std::string_view line);

/// ezpz's thresholds: --min-success-nodes N or --min-success-fraction F (of all targets,
/// the local node included). With neither, every node must succeed.
struct SuccessRule {
  std::optional<int> min_nodes;
  std::optional<double> min_fraction;
};
[[nodiscard]] Expected<void> check_success_rule(const SuccessRule& rule);
[[nodiscard]] bool success(const SuccessRule& rule, int succeeded, int total);

}  // namespace ezpz::core
