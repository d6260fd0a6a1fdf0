#include "core/job/cluster.hpp"

#include <algorithm>
#include <cstdio>

#include "core/base/strings.hpp"

namespace ezpz::core {
namespace {

std::string dirname(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash == 0 ? 1 : slash);
}

std::string basename(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

Expected<HostList> read_hosts(const HostSource& source, const FileProbe& probe) {
  switch (source.kind) {
    case HostSource::Kind::this_host:
      return HostList{source.value};
    case HostSource::Kind::nodelist:
      return expand_nodelist(source.value);
    case HostSource::Kind::file:
      break;
  }
  const std::string named = source.origin == "--hostfile" ? "--hostfile " : source.origin + "=";
  if (!probe.is_file(source.value)) {
    const bool there = probe.disk_space(source.value).has_value();  // a FIFO, a device, a directory
    const auto stamp = probe.file_stamp(source.value);
    return usage_error("hostfile " + source.value + " (from " + named + source.value + ") " +
                       (stamp && stamp->directory ? "is a directory"
                        : there                   ? "is not a regular file"
                                                  : "does not exist") +
                       ": pass an existing file with --hostfile or unset " +
                       (source.origin == "--hostfile" ? std::string("it") : source.origin));
  }
  auto text = probe.read_file(source.value);
  if (!text) {
    return usage_error(text.error().message);
  }
  EZPZ_TRY_ASSIGN(auto hosts, parse_hostfile(*text, source.value));
  if (hosts.empty()) {
    return usage_error("hostfile " + source.value + " (from " + named + source.value +
                       ") lists no hosts: write one host name per line");
  }
  return hosts;
}

}  // namespace

HostSource find_host_source(const Env& env, Scheduler scheduler, const std::optional<std::string>& cli_hostfile,
                            const FileProbe& probe) {
  std::vector<std::string> aux;
  if (scheduler == Scheduler::pbs && !cli_hostfile && !env.has("PBS_NODEFILE") && !env.has("HOSTFILE")) {
    aux = probe.list_dir(kPbsAuxDir);
  }
  return choose_host_source(env, scheduler, cli_hostfile, aux);
}

std::optional<Error> malformed_hostfile(const Env& env, const std::optional<std::string>& cli_hostfile,
                                        const SystemProbe& probe) {
  auto scheduler = detect_scheduler(env);
  const auto source = find_host_source(env, scheduler ? *scheduler : Scheduler::local, cli_hostfile, probe);
  if (source.kind != HostSource::Kind::file || !probe.is_file(source.value)) {
    return std::nullopt;
  }
  auto text = probe.read_file(source.value);
  if (!text) {
    return std::nullopt;
  }
  auto hosts = parse_hostfile(*text, source.value);
  return hosts ? std::nullopt : std::optional<Error>(hosts.error());
}

HostSource choose_host_source(const Env& env, Scheduler scheduler, const std::optional<std::string>& cli_hostfile,
                              const std::vector<std::string>& aux_entries) {
  if (cli_hostfile) {
    return {HostSource::Kind::file, "--hostfile", *cli_hostfile};
  }
  if (auto v = env.get("PBS_NODEFILE")) {
    return {HostSource::Kind::file, "PBS_NODEFILE", *v};
  }
  if (auto v = env.get("HOSTFILE")) {
    return {HostSource::Kind::file, "HOSTFILE", *v};
  }
  if (scheduler == Scheduler::pbs) {
    if (auto id = pbs_job_id(env)) {
      auto it = std::find_if(aux_entries.begin(), aux_entries.end(),
                             [&](const std::string& name) { return name == *id || starts_with(name, *id + "."); });
      if (it != aux_entries.end()) {
        return {HostSource::Kind::file, "PBS aux dir", std::string(kPbsAuxDir) + "/" + *it};
      }
    }
  }
  if (auto v = env.first_of({"SLURM_JOB_NODELIST", "SLURM_NODELIST"})) {
    return {HostSource::Kind::nodelist, v->first, v->second};
  }
  return {HostSource::Kind::this_host, "hostname", env.hostname.empty() ? "localhost" : env.hostname};
}

namespace {

/// The allocation's or the profile's number, before the visibility variables.
GpuCount base_gpus(const Env& env, const MachineProfile& machine, int device_count, bool applies) {
  if (auto v = env.first_of({"SLURM_GPUS_ON_NODE", "SLURM_GPUS_PER_NODE"})) {
    if (auto n = parse_slurm_gpus(v->second)) {
      return GpuCount{*n, v->first, v->first + "=" + v->second, true};
    }
  }
  if (applies && machine.gpus_per_node > 0) {
    GpuCount g{machine.gpus_per_node, "machine profile",
               "machine profile " + machine.name + " (" + std::to_string(machine.gpus_per_node) + ")", true};
    const int tiles = tiles_per_gpu(machine.name);
    auto hierarchy = env.get("ZE_FLAT_DEVICE_HIERARCHY");
    if (tiles > 1 && hierarchy && to_lower(*hierarchy) == "composite" && g.per_node >= tiles) {
      g.per_node /= tiles;
      g.source = "ZE_FLAT_DEVICE_HIERARCHY";
      g.detail +=
          ", ZE_FLAT_DEVICE_HIERARCHY=" + *hierarchy + ": one device per card (" + std::to_string(g.per_node) + ")";
    }
    return g;
  }
  if (device_count > 0) {
    return GpuCount{device_count, "device files", "device files (" + std::to_string(device_count) + ")", true};
  }
  return GpuCount{};
}

}  // namespace

bool profile_applies(const MachineProfile& machine, bool forced, Scheduler running) {
  return forced || !machine.scheduler || *machine.scheduler == running;
}

Expected<GpuCount> gpus_per_node(const Env& env, const MachineProfile& machine, int device_count, bool use_profile) {
  if (auto v = env.get("NGPU_PER_HOST")) {
    auto n = parse_positive_int(*v);
    if (!n) {
      return usage_error("NGPU_PER_HOST='" + *v + "' is not a positive whole number: fix or unset it");
    }
    return GpuCount{*n, "NGPU_PER_HOST", "NGPU_PER_HOST=" + *v, true};
  }
  GpuCount g = base_gpus(env, machine, device_count, use_profile);
  if (!g.known) {
    return g;
  }
  // What the job can see on each node: no more devices than its visibility variables leave.
  const bool any = machine.gpu_bind == "none" || machine.gpu_bind.empty();
  const bool composite = to_lower(env.get("ZE_FLAT_DEVICE_HIERARCHY").value_or("")) == "composite";
  auto cap = [&](std::string_view name, bool applies, bool ze) {
    auto v = env.get(name);
    if (!applies || !v) {
      return;
    }
    const int n = ze ? count_ze_mask(*v, composite) : count_visible_devices(*v);
    if (n < g.per_node) {
      g.source = std::string(name);
      g.detail += ", " + g.source + "=" + *v + " (" + std::to_string(n) + ")";
      g.per_node = std::max(n, 1);
      g.known = n > 0;
    }
  };
  cap("CUDA_VISIBLE_DEVICES", any || machine.gpu_bind == "cuda", false);
  cap("ROCR_VISIBLE_DEVICES", any || machine.gpu_bind == "rocr", false);
  cap("HIP_VISIBLE_DEVICES", any || machine.gpu_bind == "rocr", false);
  cap("ZE_AFFINITY_MASK", any || machine.gpu_bind == "ze", true);
  return g;
}

namespace {

/// The MPI whose tools `dir` holds beside its launcher (nullopt: none of them).
std::optional<LauncherStyle> folder_mpi_style(const FileProbe& probe, const std::string& dir) {
  if (probe.is_file(dir + "/ompi_info")) {
    return LauncherStyle::openmpi;
  }
  if (probe.is_file(dir + "/mpichversion") || probe.is_file(dir + "/hydra_pmi_proxy") ||
      probe.is_file(dir + "/impi_info")) {
    return LauncherStyle::mpich;
  }
  return std::nullopt;
}

}  // namespace

LauncherStyle detect_mpi_style(const FileProbe& probe, const std::string& program_path) {
  const std::string real = probe.real_path(program_path);
  for (const auto& path : {real, program_path}) {
    auto lower = to_lower(path);
    if (lower.find("openmpi") != std::string::npos || lower.find("orterun") != std::string::npos ||
        lower.find("prterun") != std::string::npos) {
      return LauncherStyle::openmpi;
    }
    if (lower.find("/pals/") != std::string::npos) {
      return LauncherStyle::pals;
    }
    if (lower.find("mpich") != std::string::npos || lower.find("hydra") != std::string::npos ||
        lower.find("intel") != std::string::npos || lower.find("impi") != std::string::npos) {
      return LauncherStyle::mpich;
    }
  }
  const auto real_dir = dirname(real);
  if (auto style = folder_mpi_style(probe, real_dir)) {
    return *style;
  }
  if (const auto named_dir = dirname(program_path); named_dir != real_dir) {  // else looked at
    if (auto style = folder_mpi_style(probe, named_dir)) {
      return *style;
    }
  }
  // Hydra-compatible flags (-n, -ppn, -f) are the most common dialect of an unknown mpiexec.
  return basename(real) == "mpirun" ? LauncherStyle::openmpi : LauncherStyle::mpich;
}

std::optional<ConfigLocation> config_location(const Env& env) {
  if (auto path = env.get("EZPZ_CONFIG")) {
    return ConfigLocation{*path, true};
  }
  if (auto xdg = env.get("XDG_CONFIG_HOME")) {
    return ConfigLocation{*xdg + "/ezpz/config.toml", false};
  }
  if (auto home = env.get("HOME")) {
    return ConfigLocation{*home + "/.config/ezpz/config.toml", false};
  }
  return std::nullopt;
}

const std::vector<std::string>& node_local_roots() {
  static const std::vector<std::string> roots = {"/tmp", "/dev/shm", "/local", "/raid"};
  return roots;
}

bool node_local_binary(const std::string& exe) {
  return std::any_of(node_local_roots().begin(), node_local_roots().end(),
                     [&](const std::string& root) { return exe.rfind(root + "/", 0) == 0; });
}

Expected<YeetSettings> load_yeet_settings(const Env& env, const FileProbe& probe) {
  auto where = config_location(env);
  if (!where || !probe.is_file(where->path)) {
    return YeetSettings{};
  }
  auto text = probe.read_file(where->path);
  if (!text) {
    return usage_error(text.error().message);
  }
  return yeet_settings_from_toml(*text, where->path);
}

Expected<LaunchSettings> load_launch_settings(const Env& env, const FileProbe& probe) {
  auto where = config_location(env);
  if (!where || !probe.is_file(where->path)) {
    return LaunchSettings{};
  }
  auto text = probe.read_file(where->path);
  if (!text) {
    return usage_error(text.error().message);
  }
  return launch_settings_from_toml(*text, where->path);
}

Expected<MachineSet> load_machines(const Env& env, const FileProbe& probe) {
  auto machines = MachineSet::builtin();
  if (!machines) {
    return machines;
  }
  auto where = config_location(env);
  if (!where) {
    return machines;
  }
  if (!probe.is_file(where->path)) {
    if (where->required) {
      return usage_error("config file " + where->path +
                         " (from EZPZ_CONFIG) does not exist: create it or unset EZPZ_CONFIG");
    }
    return machines;
  }
  auto text = probe.read_file(where->path);
  if (!text) {
    return usage_error(text.error().message);
  }
  EZPZ_TRY(machines->merge_toml(*text, where->path));
  return machines;
}

std::string master_address(const HostList& hosts, const MachineProfile& machine, const HostProbe& probe,
                           Lookups lookups, std::vector<std::string>* warnings) {
  if (hosts.empty()) {
    return "127.0.0.1";
  }
  if (machine.master_addr_suffix.empty()) {
    return hosts.front();
  }
  auto hsn = short_hostname(hosts.front()) + machine.master_addr_suffix;
  if (lookups == Lookups::none) {
    return hsn;
  }
  const auto found = probe.look_up(hsn, kLookupTimeoutS);
  if (warnings != nullptr && (found.timed_out || found.seconds >= kSlowLookupS)) {
    char took[32];
    std::snprintf(took, sizeof(took), "%.1f", found.seconds);
    warnings->push_back(found.timed_out ? hsn + " did not resolve within " + took +
                                              " s (slow DNS): MASTER_ADDR=" + hosts.front() + " instead"
                                        : "looking up " + hsn + " took " + took + " s (slow DNS)");
  }
  return found.resolves ? hsn : hosts.front();
}

Expected<ClusterInfo> discover_cluster(const Env& env, const MachineSet& machines,
                                       const std::optional<std::string>& cli_machine,
                                       const std::optional<std::string>& cli_hostfile, const SystemProbe& probe,
                                       Lookups lookups) {
  ClusterInfo info;
  EZPZ_TRY_ASSIGN(auto scheduler, detect_scheduler(env));
  info.scheduler = scheduler;

  // Machine: --machine > EZPZ_MACHINE > hostname rules.
  std::optional<std::pair<std::string, std::string>> forced;
  if (cli_machine) {
    forced = {"--machine", *cli_machine};
  } else if (auto v = env.get("EZPZ_MACHINE")) {
    forced = {"EZPZ_MACHINE", *v};
  }
  if (forced) {
    const auto* m = machines.find(forced->second);
    if (m == nullptr) {
      return usage_error(forced->first + " " + excerpt(forced->second) + " is not a known machine: use one of " +
                         join(machines.names(), ", ") + " or add it to your config file");
    }
    info.machine = *m;
    info.machine_forced = true;
    info.machine_how = MachineEvidence::named;
    info.machine_reason = "named by " + forced->first + "=" + forced->second;
  } else {
    auto match = machines.identify(env);
    info.machine = *match.profile;
    info.machine_how = match.how;
    info.machine_reason = std::move(match.reason);
  }

  info.host_source = find_host_source(env, info.scheduler, cli_hostfile, probe);
  EZPZ_TRY_ASSIGN(auto hosts, read_hosts(info.host_source, probe));
  if (hosts.empty()) {
    return usage_error(info.host_source.origin + "='" + excerpt(info.host_source.value) + "' names no hosts");
  }
  info.hosts = std::move(hosts);
  info.master_addr = master_address(info.hosts, info.machine, probe, lookups, &info.warnings);

  // GPUs and tasks per node: what the allocation allows, else the profile, else this node.
  const bool applies = profile_applies(info.machine, info.machine_forced, info.scheduler);
  const bool need_devices = !env.has("NGPU_PER_HOST") && !env.has("SLURM_GPUS_ON_NODE") &&
                            !env.has("SLURM_GPUS_PER_NODE") && (!applies || info.machine.gpus_per_node <= 0);
  EZPZ_TRY_ASSIGN(auto gpus, gpus_per_node(env, info.machine, need_devices ? probe.count_gpu_devices() : 0, applies));
  info.gpus = gpus;
  if (info.scheduler == Scheduler::slurm) {
    info.slurm = slurm_tasks(env);
  }
  return info;
}

}  // namespace ezpz::core
