// Where a launch writes, decided before it runs: its own folder in --log-dir, the directories its
// ranks need by the time they start, and which of them to tidy once the attempts have ended.
// Pure: the caller makes, links and removes them (cli/launch.cpp, through the probe).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/launch/launch_plan.hpp"

namespace ezpz::core {

/// --log-dir DIR: each launch its own folder in it (a run again overwrites nothing), `latest` its link.
struct LogDirs {
  std::string
      base;  ///< DIR made absolute (against the working directory: the same on every node); "" without --log-dir
  std::string name;  ///< launch-STAMP-PID: what base/latest points at
  std::string run;   ///< base/name: this launch's folder, the ranks' --log-dir
};
[[nodiscard]] LogDirs plan_log_dirs(const std::optional<std::string>& log_dir, const std::string& working_dir,
                                    const std::string& stamp, long pid);

/// How a launch's record directories come to be, and its old records go.
struct RecordSteps {
  /// Made on the pruner's thread as the ranks start: under a launcher each rank's shim makes its
  /// launch's directories before its command runs, so here they are made beside the launcher's
  /// start, not before it (on a shared home each mkdir is a metadata round trip). Empty for the
  /// built-in launcher, whose ranks need them first, and for failover (each attempt makes its own).
  std::vector<std::string> make_first;
  std::string job_folder;  ///< the folder of this launch's records: the pruner never removes it
  bool prune = false;      ///< old records pruned while the job runs (records kept, and a record directory)
};
struct RecordAsk {
  bool record = true;     ///< records wanted (records_wanted: not --no-record, EZPZ_NO_RECORD)
  bool failover = false;  ///< --spare-nodes: each attempt makes its own directories
};
[[nodiscard]] RecordSteps plan_record_steps(const LaunchPlan& plan, const RecordAsk& ask);

/// The directories an attempt's ranks write to: its record directory, its log directory if apart.
[[nodiscard]] std::vector<std::string> launch_dirs(const LaunchPlan& plan);

/// The record directories of `attempts` attempts, the last first: each removed if empty once
/// they ended (no rank left an error file or a report: no empty folders either).
[[nodiscard]] std::vector<std::string> record_dirs_to_tidy(const LaunchPlan& plan, int attempts);

}  // namespace ezpz::core
