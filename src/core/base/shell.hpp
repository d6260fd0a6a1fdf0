// Quoting for POSIX shells: the one place argv becomes shell text.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ezpz::core {

/// `s` as one word for sh/bash/zsh: bare when it only has safe characters,
/// else in single quotes with embedded quotes written as '\''.
[[nodiscard]] std::string shell_quote(std::string_view s);

/// argv as one command line, each word quoted.
[[nodiscard]] std::string shell_join(const std::vector<std::string>& argv);

/// "NAME=value ... argv" as one line that a shell runs as-is.
[[nodiscard]] std::string shell_command_line(const std::vector<std::pair<std::string, std::string>>& env,
                                             const std::vector<std::string>& argv);

/// "ssh -o BatchMode=yes" -> {"ssh", "-o", "BatchMode=yes"}: shell words (quotes and
/// backslashes as sh reads them; no expansions). The inverse of shell_join.
[[nodiscard]] std::vector<std::string> split_command(const std::string& command);

}  // namespace ezpz::core
