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
/// The level's name as EZPZ_LOG_LEVEL and a relay's --log-level take it ("info", "debug",
/// "trace"); "" at the default (warnings only), which nodes need not be told.
[[nodiscard]] std::string level_name();
/// Name the node this process works for in every line (a relay: its host), so that the lines
/// of a whole tree, gathered on the head's terminal, say whose they are.
void set_origin(std::string_view origin);

void debug(std::string_view message);
void info(std::string_view message);
/// One whole line on stderr as it is (no time, no level): what a process with no terminal of its
/// own (an agent, a relay) says for its head to show, such as "ezpz: warning: node3: ...".
/// Written unless the level is off; sys/ writes to stderr only through here and the above.
void line(std::string_view text);

}  // namespace ezpz::log
