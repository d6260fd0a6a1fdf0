// Diagnostic logging for core and sys (spdlog behind a narrow interface, so only
// log.cpp pays spdlog's compile time). Quiet by default; -v or EZPZ_LOG_LEVEL raise it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ezpz::log {

enum class Level { trace, debug, info, warn, off };

/// Level from -v count (1 info, 2 debug, 3+ trace) or EZPZ_LOG_LEVEL (trace, debug,
/// info, warn, off); the more verbose of the two wins. Default: warn.
[[nodiscard]] Level level_from(int verbosity, const std::optional<std::string>& env_level);
void set_level(Level level);
[[nodiscard]] bool enabled(Level level);

void debug(std::string_view message);
void info(std::string_view message);

}  // namespace ezpz::log
