// What in a batch script loses the allocation without a word, as sites have written it down:
// `set -u` before the script loads modules or a profile (/etc/profile and Lmod abort under it:
// walltime 0, empty logs), Lmod's init sourced in a non-login shell (MODULEPATH stays empty: every
// `module load` does nothing), and a script fetched from the network on a compute node (no
// outbound network there: a hang of minutes, then an unconfigured env). Pure: the text in.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ezpz::core {

struct ScriptTrap {
  int line = 0;         ///< 1-based line of the script that springs it
  std::string problem;  ///< one line: what happens
  std::string remedy;
};

/// The traps in `script` (a bash/sh/zsh batch script), in line order; empty when none.
[[nodiscard]] std::vector<ScriptTrap> script_traps(std::string_view script);

/// Whether `text` starts like a shell script (#! naming sh, bash, zsh or ksh).
[[nodiscard]] bool is_shell_script(std::string_view text);

}  // namespace ezpz::core
