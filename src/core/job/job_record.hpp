// Where a launch's JSON record goes: $EZPZ_HOME (default ~/.ezpz)/jobs/<job>/.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/env.hpp"
#include "core/job/scheduler.hpp"

namespace ezpz::core {

/// The PBS or Slurm job id, else local-<timestamp>: TORCHELASTIC_RUN_ID and the jobs folder's name.
[[nodiscard]] std::string job_run_id(const Env& env, Scheduler scheduler, std::string_view timestamp);

/// <home>/jobs/<job_run_id>/launch-<timestamp>-<pid>: the launch's directory (ranks' error files
/// and failure reports); nullopt when neither EZPZ_HOME nor HOME is set. `timestamp` is like
/// 20261122T003418.
[[nodiscard]] std::optional<std::string> record_dir(const Env& env, Scheduler scheduler, std::string_view timestamp);

/// record_dir() + ".json": the launch's record.
[[nodiscard]] std::optional<std::string> record_path(const Env& env, Scheduler scheduler, std::string_view timestamp);

/// <home>/jobs, where every launch's record goes; nullopt when neither EZPZ_HOME nor HOME is set.
[[nodiscard]] std::optional<std::string> jobs_dir(const Env& env);

/// Whether a launch writes its record (and gives its ranks a directory for their error files):
/// not with --no-record (`no_record`) or EZPZ_NO_RECORD set to anything but 0.
[[nodiscard]] bool records_wanted(const Env& env, bool no_record);

/// How many launch records are kept: EZPZ_KEEP_RECORDS (0: every one), default 100.
inline constexpr std::size_t kDefaultKeptRecords = 100;
[[nodiscard]] std::size_t records_to_keep(const Env& env);

/// The finished launches' records beyond the newest `keep` (0: none), oldest first: for each, its
/// `.json` and its directory (error files, failure reports), as paths under `jobs`. `listing`
/// maps each job directory's name to its entries. A launch still running has no `.json` yet,
/// so its directory is never among them. `coming`: records not written yet that count among the
/// `keep` (a launch prunes while it runs, before its own record exists).
[[nodiscard]] std::vector<std::string> records_to_prune(const std::string& jobs,
                                                        const std::map<std::string, std::vector<std::string>>& listing,
                                                        std::size_t keep, std::size_t coming = 0);

/// The job folders in `listing` that nothing is left in once `pruned` (records_to_prune's paths)
/// is gone, as paths under `jobs`; never `current` (the folder a running launch is filling).
[[nodiscard]] std::vector<std::string> emptied_job_folders(
    const std::string& jobs, const std::map<std::string, std::vector<std::string>>& listing,
    const std::vector<std::string>& pruned, const std::string& current);

}  // namespace ezpz::core
