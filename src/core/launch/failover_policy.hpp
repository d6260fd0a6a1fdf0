// What the failover loop does after an attempt failed, as a pure step: the verdict and what the
// attempt showed in, the decision (stop, the same nodes again, or a swap) and what to say out.
// cli/launch_failover.cpp runs the attempts and does what this decides.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/launch/failover.hpp"
#include "core/launch/failure_signs.hpp"

namespace ezpz::core {

/// Where the loop stands, carried from one failed attempt to the next.
struct FailoverState {
  int swaps = 0;         ///< nodes swapped so far (each failed attempt that swapped counts once)
  int retried = 0;       ///< --retries used on the same nodes
  int silent = 0;        ///< attempts in a row that failed before any rank printed a line
  int storage_runs = 0;  ///< attempts in a row that ended in a storage error
};

/// What the user allowed: --retries (the application's failures run again on the same nodes) and
/// --max-failover-retries (how many times nodes are swapped).
struct FailoverLimits {
  int retries = 0;
  std::optional<int> max_swaps;
};

/// What comes after a failed attempt.
struct FailoverStep {
  enum class Kind { stop, same_nodes, swap } kind = Kind::stop;
  /// Said in this order, each a warning; `sign_after` lines of the failure's sign (and its known
  /// remedy) follow the first when set.
  std::vector<std::string> warnings;
  bool sign_after = false;
  NodeSplit split;  ///< swap: the active and spare nodes of the next attempt
};

/// The step after an attempt that failed (not a success, not a signal to ezpz): `verdict` from
/// its facts, `sign` its failure's sign, `said_nothing` whether no rank printed a line, `split`
/// the nodes it ran on and the spares. Updates `state`. Walltime stops; systemic stops; storage
/// runs the same nodes again up to kStorageRetries times in a row; the application's failure
/// runs again while --retries lasts; bad nodes are swapped for spares (none left, or
/// --max-failover-retries reached: stop). Two attempts in a row that said nothing stop the loop.
[[nodiscard]] FailoverStep next_failover_step(FailoverState& state, const Verdict& verdict, const FailureSign& sign,
                                              bool said_nothing, const NodeSplit& split, const FailoverLimits& limits);

}  // namespace ezpz::core
