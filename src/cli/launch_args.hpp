// ezpz launch's tokens before "--": ezpz's own flags are recognised anywhere; only tokens ezpz
// does not know go to the launcher. A near miss of one of ezpz's flags and torchrun's own flags
// are usage errors that say what to do instead.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace ezpz::cli {

struct LaunchTokens {
  std::vector<std::string> ezpz;      ///< for CLI11: ezpz's flags with their values, then the command
  std::vector<std::string> launcher;  ///< passed to the launcher verbatim, in order
  std::string error;                  ///< the first usage problem ("" when none)
  std::vector<std::string> global;    ///< ezpz's own -v, -vv, --verbose before the command
};

/// Split the tokens after `launch` (up to "--" when `had_separator`). Without "--", the command
/// starts at the first word that is not a flag or a flag's value, and unknown flags are errors.
[[nodiscard]] LaunchTokens split_launch_tokens(const std::vector<std::string>& tokens, bool had_separator,
                                               const CLI::App& app);

/// What ezpz says to a torchrun-only flag ("" when `name` is not one); `value` is its value if given.
[[nodiscard]] std::string torchrun_flag_answer(const std::string& name, const std::string& value);

/// The flag of `app` that `name` (an unknown flag, e.g. "--dryrun") is a near miss of, else "".
[[nodiscard]] std::string near_flag(const std::string& name, const CLI::App& app);

}  // namespace ezpz::cli
