// Machine profiles: data (TOML), embedded in the binary, overridable by users.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/env.hpp"
#include "core/base/expected.hpp"
#include "core/job/scheduler.hpp"

namespace ezpz::core {

/// The flag dialect of a launcher program.
enum class LauncherStyle { auto_detect, pals, sophia, srun, openmpi, mpich, local };

[[nodiscard]] std::string_view to_string(LauncherStyle s);
[[nodiscard]] std::optional<LauncherStyle> launcher_style_from_string(std::string_view name);
/// Whether ezpz stops this launcher's ranks through their shims: every launcher's. Stopped, Open
/// MPI's mpirun SIGKILLs its ranks within milliseconds (and all of them once one ends), MPICH's
/// Hydra SIGKILLs them too, srun takes one SIGINT for a status request and SIGTERM for an abort
/// (SIGKILL): through the shims each rank gets the signal itself, with --kill-after for its handler.
[[nodiscard]] constexpr bool stops_through_shims(LauncherStyle s) {
  return s != LauncherStyle::local && s != LauncherStyle::auto_detect;
}

struct MachineProfile {
  std::string name;
  std::string description;
  std::vector<std::string> match_prefix;  ///< hostname prefixes (lower case)
  std::string match_contains;             ///< extra substring the hostname must contain
  std::optional<Scheduler> scheduler;     ///< the scheduler this machine runs
  std::string launcher = "auto";          ///< mpiexec, mpirun, srun or auto
  LauncherStyle style = LauncherStyle::auto_detect;
  std::string cpu_bind;                    ///< default --cpu-bind value; empty = none
  int depth = 0;                           ///< --depth for cpu_bind = "depth"
  int gpus_per_node = 0;                   ///< 0 = unknown
  int cpus_per_node = 0;                   ///< CPUs a node's tasks may use, in srun's unit: -c is this / ranks per node
  std::vector<std::string> launcher_args;  ///< flags added to this machine's launcher line (before the user's)
  std::vector<std::string> sched_args;     ///< batch directives `ezpz submit` writes ("-C gpu", "-l filesystems=...")
  std::string gpu_bind = "none";           ///< what --gpu-bind auto pins: none, cuda, ze or rocr
  bool gpu_reverse = false;                ///< local rank 0 takes the last GPU (Polaris' affinity script)
  std::string master_addr_suffix;          ///< high-speed-network name: short host + this, used when it resolves
  std::vector<std::pair<std::string, std::string>> env;  ///< exported unless already set
  /// Hostname prefixes other sites use too: they pick this machine only with a `match_env`
  /// signal, or, with `guess_from_prefix`, as a guess that launch and doctor warn about.
  std::vector<std::string> shared_prefix;
  std::vector<std::pair<std::string, std::string>> match_env;  ///< NAME -> text its value contains (lower case)
  bool guess_from_prefix = false;
  int at_scale_nodes = 0;  ///< env_at_scale applies to jobs on more hosts than this (0 = never)
  int start_timeout = 30;  ///< seconds a launch waits for its first rank before it says why none started (0: forever)
  std::vector<std::pair<std::string, std::string>> env_at_scale;
  /// File-name prefixes of the collective library's network plugin its fast path needs
  /// ("libnccl-net": NCCL without it falls back to TCP sockets, silently); empty: none needed.
  std::vector<std::string> net_plugin;
  std::string net_plugin_hint;  ///< how to get it ("module load nccl/2.24.3")
  bool modules = false;         ///< the site's software comes as environment modules (an empty MODULEPATH is a trap)
  int yeet_above_nodes = 0;     ///< doctor suggests ezpz yeet for an env on a shared filesystem above this (0: never)

  /// Whether `lower_hostname` starts with one of match_prefix (and contains match_contains).
  [[nodiscard]] bool matches(std::string_view lower_hostname) const;
  bool operator==(const MachineProfile&) const = default;
};

/// The built-in profiles as data, in detection order: src/core/job/builtin_profiles.cpp, which
/// scripts/gen-builtin-machines.sh writes from machines.toml through merge_toml (a unit test
/// fails when the two differ). Every ezpz run needs them; parsing the TOML took a third of a
/// launch's instructions.
[[nodiscard]] std::vector<MachineProfile> builtin_profiles();

/// How the machine of this run was decided (doctor shows it; a guess is a launch warning).
enum class MachineEvidence {
  named,     ///< --machine or EZPZ_MACHINE
  hostname,  ///< a prefix only this machine uses
  signal,    ///< a shared prefix plus the site's own environment (match_env)
  guessed,   ///< a shared prefix alone (guess_from_prefix)
  fallback,  ///< nothing matched: the generic "local" profile
};

struct MachineMatch {
  const MachineProfile* profile = nullptr;
  MachineEvidence how = MachineEvidence::fallback;
  std::string reason;  ///< one clause naming the evidence, e.g. "hostname 'x4102...' starts with 'x4' and ..."
};

class MachineSet {
 public:
  /// The profiles compiled into ezpz (src/core/job/machines.toml, as builtin_profiles()).
  [[nodiscard]] static Expected<MachineSet> builtin();
  /// The same, parsed from the TOML text (what builtin_profiles() is checked against).
  [[nodiscard]] static Expected<MachineSet> builtin_parsed();

  /// Parse TOML text naming `[[machine]]` tables and merge it over this set:
  /// a known name overrides only the keys it sets; a new name is checked first
  /// during detection. Errors name `source`, the line and the key.
  [[nodiscard]] Expected<void> merge_toml(std::string_view text, std::string_view source);

  [[nodiscard]] const MachineProfile* find(std::string_view name) const;
  /// The machine of `env.hostname` (docs/machines.md "Detection"): a profile whose own prefix
  /// matches; else one whose shared prefix matches with a match_env signal; else one whose shared
  /// prefix guesses it; else "local".
  [[nodiscard]] MachineMatch identify(const Env& env) const;
  /// The "local" profile (built in; a user may override its keys).
  [[nodiscard]] const MachineProfile& generic() const;
  [[nodiscard]] std::vector<std::string> names() const;
  [[nodiscard]] const std::vector<MachineProfile>& profiles() const { return profiles_; }

 private:
  std::vector<MachineProfile> profiles_;  // detection order
};

/// The config file's [yeet] table: extra places yeet may replace a destination without --force
/// (`allowed_roots`), and how yeet, `kill --all-nodes` and `doctor --nodes` reach other nodes when
/// no flag says (`transport`: auto, launcher or ssh; "" when not set), and where a copy goes when
/// no --dst says (`destination`, a pattern with {user}, {name}, {hash}; "" when not set).
struct YeetSettings {
  std::vector<std::string> allowed_roots;
  std::string transport;
  std::string destination;
  std::string source;  ///< the file they came from ("" when none)
};
[[nodiscard]] Expected<YeetSettings> yeet_settings_from_toml(std::string_view text, std::string_view source);

/// The config file's [launch] settings.
struct LaunchSettings {
  bool omp_notice = true;  ///< say that every rank gets OMP_NUM_THREADS=1 (torchrun's default)
};
[[nodiscard]] Expected<LaunchSettings> launch_settings_from_toml(std::string_view text, std::string_view source);

/// A profile's env value with `{uid}` and `{job_id}` (SLURM_JOB_ID or PBS_JOBID up to its first
/// '.', characters other than [A-Za-z0-9._-] made '_'; "nojob" outside a job) filled in.
[[nodiscard]] std::string expand_machine_value(std::string_view value, const Env& env);

/// The text of src/core/job/machines.toml.
[[nodiscard]] std::string_view builtin_machines_toml();

/// Names of the built-in machines, usable without parsing (completions).
[[nodiscard]] const std::vector<std::string_view>& builtin_machine_names();

}  // namespace ezpz::core
