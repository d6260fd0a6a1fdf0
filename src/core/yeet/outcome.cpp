#include "core/yeet/outcome.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "core/base/json_fields.hpp"

namespace ezpz::core {

std::string_view to_string(NodeOutcome o) {
  switch (o) {
    case NodeOutcome::ok:
      return "ok";
    case NodeOutcome::repaired:
      return "repaired";
    case NodeOutcome::failed:
      return "failed";
    case NodeOutcome::needs_full_copy:
      return "needs_full_copy";
    case NodeOutcome::orphaned:
      return "orphaned";
  }
  return "failed";
}

std::optional<NodeOutcome> parse_node_outcome(std::string_view text) {
  for (auto o : {NodeOutcome::ok, NodeOutcome::repaired, NodeOutcome::failed, NodeOutcome::needs_full_copy,
                 NodeOutcome::orphaned}) {
    if (to_string(o) == text) {
      return o;
    }
  }
  return std::nullopt;
}

std::string encode_result(const NodeResult& r) {
  auto steps = nlohmann::json::array();
  for (const auto& [name, secs] : r.steps) {
    steps.push_back({name, secs});
  }
  return nlohmann::json{{"host", r.host},
                        {"ok", r.ok()},
                        {"outcome", to_string(r.outcome)},
                        {"seconds", r.seconds},
                        {"bytes", r.bytes},
                        {"digest_ok", r.digest_ok},
                        {"error", r.error},
                        {"reattached_to", r.reattached_to},
                        {"steps", steps}}
      .dump();
}

std::optional<NodeResult> decode_result(std::string_view line) {
  // A peer's line: anything that is not a well-typed result is not a result (never an exception).
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("host") || !j["host"].is_string()) {
    return std::nullopt;
  }
  NodeResult r;
  using json_fields::get;
  bool ok = false;
  std::string outcome;
  if (!get(j, "host", r.host) || !get(j, "ok", ok) || !get(j, "seconds", r.seconds) || !get(j, "bytes", r.bytes) ||
      !get(j, "digest_ok", r.digest_ok) || !get(j, "error", r.error) || !get(j, "reattached_to", r.reattached_to) ||
      !get(j, "outcome", outcome)) {
    return std::nullopt;
  }
  // A line without "outcome" (an older relay) says only ok or not.
  const auto parsed =
      outcome.empty() ? std::optional(ok ? NodeOutcome::ok : NodeOutcome::failed) : parse_node_outcome(outcome);
  if (!parsed || (*parsed == NodeOutcome::ok || *parsed == NodeOutcome::repaired) != ok) {
    return std::nullopt;
  }
  r.outcome = *parsed;
  if (auto steps = j.find("steps"); steps != j.end() && steps->is_array()) {  // absent from an older relay
    for (const auto& s : *steps) {
      if (s.is_array() && s.size() == 2 && s[0].is_string() && s[1].is_number()) {
        r.steps.emplace_back(s[0].get<std::string>(), s[1].get<double>());
      }
    }
  }
  return r;
}

Expected<void> check_success_rule(const SuccessRule& rule) {
  if (rule.min_nodes && rule.min_fraction) {
    return usage_error("--min-success-nodes and --min-success-fraction are mutually exclusive; pick one");
  }
  if (rule.min_nodes && *rule.min_nodes < 1) {
    return usage_error("--min-success-nodes must be >= 1 (got " + std::to_string(*rule.min_nodes) + ")");
  }
  if (rule.min_fraction && (*rule.min_fraction <= 0 || *rule.min_fraction > 1)) {
    return usage_error("--min-success-fraction must be in (0, 1] (got " + std::to_string(*rule.min_fraction) + ")");
  }
  return {};
}

bool success(const SuccessRule& rule, int succeeded, int total) {
  if (rule.min_nodes) {
    return succeeded >= *rule.min_nodes;
  }
  if (rule.min_fraction) {
    return succeeded >= static_cast<int>(std::ceil(*rule.min_fraction * total - 1e-9));
  }
  return succeeded == total;
}

}  // namespace ezpz::core
