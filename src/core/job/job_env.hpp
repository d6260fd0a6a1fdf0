// `ezpz env` and `ezpz submit`: shell text for the current job (export lines that replace
// ezpz's `ezpz_setup_job` helper) and PBS/Slurm batch scripts. Pure: values in, text out.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/expected.hpp"
#include "core/job/scheduler.hpp"

namespace ezpz::core {

enum class ShellKind { bash, zsh, fish };
[[nodiscard]] std::optional<ShellKind> shell_from_string(std::string_view s);

/// NAME=value pairs as lines that `eval "$(...)"` (bash, zsh) or `... | source` (fish) runs:
/// `export NAME='value'` or `set -gx NAME 'value'`, every value quoted.
[[nodiscard]] std::string export_lines(const std::vector<std::pair<std::string, std::string>>& vars, ShellKind shell);

/// A command held in a variable (EZPZ_LAUNCH, DIST_LAUNCH) that `$NAME args...` runs as written in
/// that shell: bash, a string its word splitting cuts back into the words (as the Python ezpz's);
/// zsh, an array (zsh does not split a string: `typeset -ga`, not exported); fish, a list
/// (`set -gx`, exported joined by spaces). Every word quoted.
[[nodiscard]] std::string command_line_var(const std::string& name, const std::vector<std::string>& words,
                                           ShellKind shell);

/// What `ezpz submit` writes.
/// The env the user has active at `ezpz submit`, carried into the script.
struct ActiveEnv {
  enum class Kind { none, venv, conda };
  Kind kind = Kind::none;
  std::string prefix;      ///< VIRTUAL_ENV, else CONDA_PREFIX
  std::string conda_base;  ///< the conda install whose bin/activate activates it ("" when unknown)
};
/// VIRTUAL_ENV, else CONDA_PREFIX (its install from CONDA_EXE or CONDA_PYTHON_EXE).
[[nodiscard]] ActiveEnv active_env(const Env& env);

/// The job id in qsub's ("8817.aurora-pbs") or sbatch's ("Submitted batch job 77") output;
/// nullopt when it holds none.
[[nodiscard]] std::optional<std::string> submitted_job_id(std::string_view output, Scheduler scheduler);

struct SubmitSpec {
  Scheduler scheduler = Scheduler::pbs;  ///< pbs or slurm
  int nodes = 1;
  std::string walltime = "01:00:00";  ///< as given; checked by check_walltime
  std::string queue;                  ///< PBS queue / Slurm partition ("" = site default)
  std::string account;
  std::string filesystems = "home";  ///< PBS -l filesystems= (ALCF); "" = none
  std::string job_name = "ezpz";
  std::vector<std::pair<std::string, std::string>> env;  ///< --env NAME=VALUE, exported in the script
  std::string workdir;                                   ///< cd here first
  std::string ezpz;                                      ///< this binary's path
  std::vector<std::string> launch_args;                  ///< extra `ezpz launch` options
  std::vector<std::string> command;                      ///< after "--"
  ActiveEnv activate;                                    ///< activated before the launch
  std::vector<std::string> sched_args;  ///< more directives: the machine's, then --sched-arg's ("-C gpu")
  /// --spare-nodes N: N nodes more in the request, kept as spares by the launch (--spare-nodes N),
  /// and Slurm's --no-kill, without which the job ends when a node fails.
  int spare_nodes = 0;
  /// --yeet: copy `yeet_src` (the active env, a directory or a tarball) to `yeet_dst` on every
  /// node before the launch (ezpz yeet --compress), and run from that copy. Empty: no copy.
  std::string yeet_src;
  std::string yeet_dst;
  std::string machine;  ///< --machine: named to the script's ezpz commands ("" = detected there)
};

/// What the command needs to find when the job starts: its program (a path, or a name looked
/// up on PATH) and, for an interpreter (python, bash, sh...), the script it is given. Each
/// with whether it is a PATH name.
struct CommandFile {
  std::string path;      ///< as written in the command
  bool on_path = false;  ///< a bare program name: looked up on PATH, not in the directory
};
[[nodiscard]] std::vector<CommandFile> command_files(const std::vector<std::string>& command);

/// HH:MM:SS, H:MM:SS, MM:SS or minutes; Slurm also D-HH[:MM[:SS]]. Returns it normalised to
/// what the scheduler takes (PBS: HH:MM:SS), or a usage error naming the formats.
[[nodiscard]] Expected<std::string> check_walltime(std::string_view text, Scheduler scheduler);
/// NAME=VALUE with a valid shell variable name.
[[nodiscard]] Expected<std::pair<std::string, std::string>> parse_env_assignment(std::string_view text);
/// The batch script (PBS or Slurm directives, then `exec ezpz launch ... -- COMMAND`).
[[nodiscard]] Expected<std::string> render_submit_script(const SubmitSpec& spec);

}  // namespace ezpz::core
