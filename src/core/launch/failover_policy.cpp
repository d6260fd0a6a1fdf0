#include "core/launch/failover_policy.hpp"

#include <algorithm>

#include "core/base/strings.hpp"

namespace ezpz::core {
namespace {

/// A verdict that blames no node: the same nodes again, or not (said either way).
FailoverStep same_nodes_or_stop(FailoverState& state, VerdictKind kind, const FailureSign& sign,
                                const FailoverLimits& limits) {
  FailoverStep step;
  if (kind == VerdictKind::systemic) {
    step.warnings.push_back("systemic: no node is at fault; a spare cannot fix this: every rank failed with " +
                            sign.what + " on nodes that all pass their probes");
    step.sign_after = true;
    return step;
  }
  if (kind == VerdictKind::storage) {
    const bool again = state.storage_runs <= kStorageRetries;
    step.warnings.push_back("storage: " + sign.what + " on nodes that pass their probes: " +
                            (again ? "the same nodes again, no spare used (" + std::to_string(state.storage_runs) +
                                         " of " + std::to_string(kStorageRetries) + ")"
                                   : std::to_string(kStorageRetries) + " times in a row: not trying again"));
    step.sign_after = true;
    step.kind = again ? FailoverStep::Kind::same_nodes : FailoverStep::Kind::stop;
    return step;
  }
  step.warnings.push_back(
      "every node of the attempt passed its probe: the application failed, not a node" +
      std::string(state.retried < limits.retries ? "; --retries runs it again on the same nodes" : ""));
  step.kind = state.retried++ < limits.retries ? FailoverStep::Kind::same_nodes : FailoverStep::Kind::stop;
  return step;
}

/// Bad nodes: each swapped for the next spare, said a line each; none left, or the limit: stop.
FailoverStep swap_or_stop(FailoverState& state, const std::vector<Eviction>& evicted, const NodeSplit& split,
                          const FailoverLimits& limits) {
  FailoverStep step;
  auto swapped = swap_nodes(split, evicted);
  if (!swapped) {
    step.warnings.push_back(swapped.error().message);
    return step;
  }
  if (limits.max_swaps && state.swaps >= *limits.max_swaps) {
    step.warnings.push_back("--max-failover-retries " + std::to_string(*limits.max_swaps) + " reached: not swapping " +
                            count_of(evicted.size(), "node") + " again");
    return step;
  }
  for (std::size_t i = 0; i < evicted.size(); ++i) {
    const auto& e = evicted[i];
    const auto at = std::find(split.active.begin(), split.active.end(), e.host) - split.active.begin();
    step.warnings.push_back(swap_line(e, swapped->active[static_cast<std::size_t>(at)], split.spare.size() - i - 1));
  }
  ++state.swaps;
  step.kind = FailoverStep::Kind::swap;
  step.split = std::move(*swapped);
  return step;
}

}  // namespace

FailoverStep next_failover_step(FailoverState& state, const Verdict& verdict, const FailureSign& sign,
                                bool said_nothing, const NodeSplit& split, const FailoverLimits& limits) {
  state.silent = said_nothing ? state.silent + 1 : 0;
  if (verdict.kind == VerdictKind::walltime) {
    return FailoverStep{FailoverStep::Kind::stop,
                        {"the job reached its time limit: no node is to blame, and no attempt starts after it"},
                        false,
                        {}};
  }
  state.storage_runs = verdict.kind == VerdictKind::storage ? state.storage_runs + 1 : 0;
  auto step = verdict.kind == VerdictKind::bad_nodes ? swap_or_stop(state, verdict.evicted, split, limits)
                                                     : same_nodes_or_stop(state, verdict.kind, sign, limits);
  if (step.kind != FailoverStep::Kind::stop && state.silent >= 2) {
    step.warnings.push_back("two attempts in a row failed before any rank printed a line: not trying again");
    step.kind = FailoverStep::Kind::stop;
  }
  return step;
}

}  // namespace ezpz::core
