// Where a launch's JSON record goes: $EZPZ_HOME (default ~/.ezpz)/jobs/<job>/.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/env.hpp"
#include "core/scheduler.hpp"

namespace ezpz::core {

/// The PBS or Slurm job id, else local-<timestamp>: TORCHELASTIC_RUN_ID and the jobs folder's name.
[[nodiscard]] std::string job_run_id(const Env& env, Scheduler scheduler, std::string_view timestamp);

/// <home>/jobs/<job_run_id>/launch-<timestamp>-<pid>: the launch's directory (ranks' error files
/// and failure reports); nullopt when neither EZPZ_HOME nor HOME is set. `timestamp` is like
/// 20261122T003418.
[[nodiscard]] std::optional<std::string> record_dir(const Env& env, Scheduler scheduler, std::string_view timestamp);

/// record_dir() + ".json": the launch's record.
[[nodiscard]] std::optional<std::string> record_path(const Env& env, Scheduler scheduler, std::string_view timestamp);

}  // namespace ezpz::core
