// What ezpz says when a job stops before its end: a signal it received (Ctrl-C, the scheduler's
// SIGTERM), a launch none of whose ranks started, and which of the job's nodes the scheduler
// has down. Pure: the scheduler's own words in, lines out.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/job/scheduler.hpp"
#include "core/ports/process.hpp"

namespace ezpz::core {

/// The line for a signal ezpz received and passed on: what it was, whom it reached, and when
/// SIGKILL follows ("SIGTERM received (walltime or scancel?): sent to 8 ranks, SIGKILL in 10 s").
[[nodiscard]] std::string stop_notice(int signo, std::string_view whom, bool many, double grace_s);

/// How many ranks' shims the hub has heard from (one never heard from has no host).
[[nodiscard]] int ranks_heard(const std::vector<RankWatch>& ranks);

/// Whether all `nprocs` ranks reported an end with code 0 (their shims saw it): a launcher that
/// fails after that failed in its teardown, and the job's work is done.
[[nodiscard]] bool every_rank_succeeded(const std::vector<RankWatch>& ranks, int nprocs);

/// A node of the job that its scheduler says is not up.
struct NodeDown {
  std::string host;
  std::string state;   ///< the scheduler's word: "down*", "drained", "offline"
  std::string reason;  ///< its reason, when it gives one
};

/// The command that asks the scheduler which of `hosts` are not up (empty: none known for it).
[[nodiscard]] std::vector<std::string> node_state_command(Scheduler scheduler, const std::vector<std::string>& hosts);
/// That command's output -> the nodes of `hosts` not up: Slurm's `sinfo -h -N -n H -o '%N|%T|%E'`
/// (down, drained, draining, failing, or not responding: a state ending in '*'); PBS's
/// `pbsnodes -l` (every node it lists is down, offline or unknown).
[[nodiscard]] std::vector<NodeDown> parse_node_states(Scheduler scheduler, std::string_view text,
                                                      const std::vector<std::string>& hosts);

/// The lines for a launch none of whose `nprocs` ranks started within `seconds` of the launcher's
/// start: the nodes the scheduler has down (`asked`: it could be asked) and what to do.
[[nodiscard]] std::vector<std::string> not_started_report(std::string_view launcher, double seconds, int nprocs,
                                                          const std::vector<NodeDown>& down, bool asked);

}  // namespace ezpz::core
