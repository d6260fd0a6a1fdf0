// Where a launch's JSON record goes: $EZPZ_HOME (default ~/.ezpz)/jobs/<job>/.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/env.hpp"
#include "core/scheduler.hpp"

namespace ezpz::core {

/// <home>/jobs/<PBS or Slurm job id, else local-<timestamp>>/launch-<timestamp>-<pid>.json;
/// nullopt when neither EZPZ_HOME nor HOME is set. `timestamp` is like 20261122T003418.
[[nodiscard]] std::optional<std::string> record_path(const Env& env, Scheduler scheduler, std::string_view timestamp);

}  // namespace ezpz::core
