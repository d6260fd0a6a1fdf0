// `ezpz kill`: which processes of ezpz-launched jobs to signal (pure), and the report.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ports/process.hpp"

namespace ezpz::core {

/// What `ezpz kill` attaches (sigqueue's value) to the signal it sends a rank's shim: the shim
/// passes the signal on and says its rank was stopped by ezpz kill, not that it failed.
inline constexpr int kKillMark = 0x657a6b6c;

/// "TERM", "SIGTERM", "term" or "15" -> 15; KILL, INT, HUP, QUIT, USR1, USR2 likewise.
[[nodiscard]] std::optional<int> signal_from_string(std::string_view s);
[[nodiscard]] std::string signal_name(int sig);
/// The names --signal takes (TERM, KILL, INT, HUP, QUIT, USR1, USR2), for completion.
[[nodiscard]] std::vector<std::string> signal_names();

/// The processes to signal: those carrying a job id, whose job id or command line contains
/// `pattern` (all when empty), never this process or its ancestors (`protect`), and only the
/// caller's own (`uid`) unless `all_users` (root, who can see every user's).
[[nodiscard]] std::vector<ProcessInfo> select_kill_targets(const std::vector<ProcessInfo>& processes,
                                                           std::string_view pattern, const std::vector<int>& protect,
                                                           unsigned uid, bool all_users);

}  // namespace ezpz::core
