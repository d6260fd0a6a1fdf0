// Discovery: from the Env snapshot and what the probe sees, the facts a launch
// plan needs (scheduler, machine, hosts, GPUs per node, MPI flavour).
#pragma once

#include <optional>
#include <string>

#include "core/base/env.hpp"
#include "core/base/expected.hpp"
#include "core/job/allocation.hpp"
#include "core/job/hostlist.hpp"
#include "core/job/machine.hpp"
#include "core/job/scheduler.hpp"
#include "core/ports/probe.hpp"

namespace ezpz::core {

/// Where the host list came from.
struct HostSource {
  enum class Kind { file, nodelist, this_host } kind = Kind::this_host;
  std::string origin;  ///< "--hostfile", "PBS_NODEFILE", "HOSTFILE", "PBS aux dir", "SLURM_NODELIST", "hostname"
  std::string value;   ///< the path, the nodelist expression or the hostname
};

/// --hostfile; PBS_NODEFILE; HOSTFILE; /var/spool/pbs/aux/<jobid>* (PBS); SLURM_NODELIST
/// (or SLURM_JOB_NODELIST); else this host. `aux_entries` lists the PBS aux directory.
[[nodiscard]] HostSource choose_host_source(const Env& env, Scheduler scheduler,
                                            const std::optional<std::string>& cli_hostfile,
                                            const std::vector<std::string>& aux_entries);

inline constexpr const char* kPbsAuxDir = "/var/spool/pbs/aux";

/// choose_host_source with the PBS aux directory listed when it is needed.
[[nodiscard]] HostSource find_host_source(const Env& env, Scheduler scheduler,
                                          const std::optional<std::string>& cli_hostfile, const FileProbe& probe);

/// The usage error of the job's hostfile (the one discover_cluster reads) when a line is not a
/// host name; nothing when it is fine, missing or unreadable (discovery says so). ezpz doctor
/// stops on it, as launch, yeet and kill do.
[[nodiscard]] std::optional<Error> malformed_hostfile(const Env& env, const std::optional<std::string>& cli_hostfile,
                                                      const SystemProbe& probe);

struct GpuCount {
  int per_node = 1;
  /// What decided the number (stable, `gpus_source` in the plan): "NGPU_PER_HOST",
  /// "SLURM_GPUS_ON_NODE", "SLURM_GPUS_PER_NODE", "machine profile", "ZE_FLAT_DEVICE_HIERARCHY",
  /// "device files", "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
  /// "ZE_AFFINITY_MASK" or "default".
  std::string source = "default";
  std::string detail = "default";  ///< for people: "machine profile polaris (4), CUDA_VISIBLE_DEVICES=0,1 (2)"
  bool known = false;              ///< false when it is only the default of 1
};

/// NGPU_PER_HOST; else the allocation's SLURM_GPUS_ON_NODE / SLURM_GPUS_PER_NODE, else the
/// profile (when `use_profile`; one device per card with ZE_FLAT_DEVICE_HIERARCHY=COMPOSITE),
/// else `device_count`, else 1; then no more than the devices the visibility variables of the
/// machine's GPU kind leave (CUDA_VISIBLE_DEVICES; ROCR_/HIP_VISIBLE_DEVICES; ZE_AFFINITY_MASK;
/// all of them for a machine of no known kind).
[[nodiscard]] Expected<GpuCount> gpus_per_node(const Env& env, const MachineProfile& machine, int device_count,
                                               bool use_profile = true);

/// Whether a machine profile describes this job: named explicitly, of no scheduler, or its
/// scheduler is the one running (an Aurora login node outside a job is not a compute node).
[[nodiscard]] bool profile_applies(const MachineProfile& machine, bool forced, Scheduler running);

/// The flag dialect of an installed MPI program, from its resolved path and its neighbours.
[[nodiscard]] LauncherStyle detect_mpi_style(const FileProbe& probe, const std::string& program_path);

/// Where user machine profiles live: $EZPZ_CONFIG (must exist), else
/// $XDG_CONFIG_HOME/ezpz/config.toml, else ~/.config/ezpz/config.toml (optional).
struct ConfigLocation {
  std::string path;
  bool required = false;
};
[[nodiscard]] std::optional<ConfigLocation> config_location(const Env& env);

/// The node-local filesystems (/tmp, /dev/shm, /local, /raid): where yeet may replace a
/// destination without --force.
[[nodiscard]] const std::vector<std::string>& node_local_roots();
/// Whether this binary lives on a node-local filesystem (where yeet itself installs): then srun
/// ships it (--bcast); elsewhere it is taken to be on a shared filesystem every node sees
/// (shipping 10 MB to every node costs seconds on slow links).
[[nodiscard]] bool node_local_binary(const std::string& exe);

/// The config file's [yeet] settings as written (yeet's defaults and checks: core::yeet_settings).
[[nodiscard]] Expected<YeetSettings> load_yeet_settings(const Env& env, const FileProbe& probe);

/// The config file's [launch] settings (their defaults without one).
[[nodiscard]] Expected<LaunchSettings> load_launch_settings(const Env& env, const FileProbe& probe);

/// Built-in machines merged with the user's config file.
[[nodiscard]] Expected<MachineSet> load_machines(const Env& env, const FileProbe& probe);

struct ClusterInfo {
  Scheduler scheduler = Scheduler::local;
  MachineProfile machine;
  bool machine_forced = false;                              ///< --machine or EZPZ_MACHINE named it
  MachineEvidence machine_how = MachineEvidence::fallback;  ///< how the machine was decided
  std::string machine_reason;                               ///< the evidence, for doctor and the guess warning
  HostSource host_source;
  HostList hosts;  ///< the allocation's hosts, deduplicated, in order
  GpuCount gpus;
  SlurmTasks slurm;                   ///< the Slurm allocation's tasks and CPUs per node (empty outside Slurm)
  std::string master_addr;            ///< the first host, by its high-speed-network name when that resolves
  int master_port = 0;                ///< a port reserved for MASTER_PORT by the caller (0 = none)
  std::vector<std::string> warnings;  ///< a look-up that was slow or cut short
};

/// How discover_cluster may learn what it needs: a dry run looks nothing up on the network.
enum class Lookups { network, none };

/// The first host's short name plus the machine's master_addr_suffix when that resolves (looked
/// up within kLookupTimeoutS; a slow or late answer adds a warning), else the first host as
/// listed. With Lookups::none, the suffixed name unchecked (what a launch on that machine uses).
[[nodiscard]] std::string master_address(const HostList& hosts, const MachineProfile& machine, const HostProbe& probe,
                                         Lookups lookups = Lookups::network,
                                         std::vector<std::string>* warnings = nullptr);

/// Gather everything: scheduler, machine (--machine > EZPZ_MACHINE > hostname),
/// hosts and GPUs per node. A named hostfile that is missing or empty is a usage error.
[[nodiscard]] Expected<ClusterInfo> discover_cluster(const Env& env, const MachineSet& machines,
                                                     const std::optional<std::string>& cli_machine,
                                                     const std::optional<std::string>& cli_hostfile,
                                                     const SystemProbe& probe, Lookups lookups = Lookups::network);

}  // namespace ezpz::core
