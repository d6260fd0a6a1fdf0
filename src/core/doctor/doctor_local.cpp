// ezpz doctor's local tier: each check a function of the Env snapshot, the probe and the facts
// gathered once (machine profiles, the job's hosts, mounts), using launch's own detection.
#include <algorithm>
#include <set>

#include "core/base/strings.hpp"
#include "core/doctor/doctor.hpp"
#include "core/launch/launch_plan.hpp"

namespace ezpz::core {
namespace {

std::set<std::string> short_names(const HostList& hosts) {
  std::set<std::string> out;
  for (const auto& h : hosts) {
    out.insert(short_hostname(h));
  }
  return out;
}

std::string names_of(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < 6; ++i) {
    out += (i ? ", " : "") + items[i];
  }
  if (items.size() > 6) {
    out += " and " + std::to_string(items.size() - 6) + " more";
  }
  return out;
}

}  // namespace

LocalFacts gather_local_facts(const Env& env, const SystemProbe& probe, const std::optional<std::string>& hostfile,
                              const std::optional<std::string>& machine, std::string version) {
  LocalFacts f;
  f.hostfile = hostfile;
  f.version = std::move(version);
  if (auto machines = load_machines(env, probe)) {
    f.machines = std::move(*machines);
    if (auto cluster = discover_cluster(env, *f.machines, machine, hostfile, probe)) {
      f.cluster = std::move(*cluster);
    } else {
      f.cluster_error = cluster.error().message;
    }
  } else {
    f.machines_error = machines.error().message;
    f.cluster_error = machines.error().message;
  }
  if (auto text = probe.read_file("/proc/self/mounts")) {
    f.mounts = parse_mounts(*text);
  } else if (auto alt = probe.read_file("/proc/mounts")) {
    f.mounts = parse_mounts(*alt);
  }
  return f;
}

std::optional<std::string> active_env(const Env& env) {
  if (auto v = env.get("VIRTUAL_ENV")) {
    return v;
  }
  return env.get("CONDA_PREFIX");
}

CheckResult check_scheduler(const Env& env, const FileProbe& probe, const LocalFacts& facts) {
  const std::string name = "scheduler";
  if (!facts.cluster) {
    return check_error(name, "cannot work out the job's hosts: " + facts.cluster_error,
                       "fix or unset the variable or file named above (as `ezpz launch` would need)");
  }
  const auto& c = *facts.cluster;
  const auto n = c.hosts.size();
  const std::string from = count_of(n, "host") + " from " + c.host_source.origin +
                           (c.host_source.origin == "hostname" ? "" : " (" + c.host_source.value + ")");
  if (c.scheduler == Scheduler::local) {
    return check_ok(name, "no batch job (local mode): " + from);
  }
  const auto id = c.scheduler == Scheduler::slurm ? slurm_job_id(env) : pbs_job_id(env);
  const std::string job = std::string(to_string(c.scheduler)) + " job " + id.value_or("(no id)");
  if (!id) {
    return check_warning(name, job + ": the scheduler was forced but no job id is set; " + from,
                         "run inside an allocation (qsub -I, salloc) or unset EZPZ_SCHEDULER");
  }
  // The scheduler's own list of the allocation, to compare with the hosts launch would use.
  std::optional<HostList> allocated;
  std::string allocated_from;
  if (c.scheduler == Scheduler::slurm) {
    if (auto v = env.first_of({"SLURM_JOB_NODELIST", "SLURM_NODELIST"})) {
      auto hosts = expand_nodelist(v->second);
      if (!hosts) {
        return check_error(name, job + ": " + v->first + " is malformed: " + hosts.error().message,
                           "run inside the allocation, or unset the stale " + v->first);
      }
      allocated = *hosts;
      allocated_from = v->first;
    }
    if (auto count = env.first_of({"SLURM_JOB_NUM_NODES", "SLURM_NNODES"}); count && allocated) {
      if (count->second != std::to_string(allocated->size())) {
        return check_error(name,
                           job + ": " + allocated_from + " names " + count_of(allocated->size(), "host") + " but " +
                               count->first + "=" + count->second,
                           "the SLURM_* variables come from different jobs: start a fresh shell in the allocation");
      }
    }
  } else if (auto nodefile = env.get("PBS_NODEFILE")) {
    auto text = probe.read_file(*nodefile);
    auto hosts = text ? parse_hostfile(*text, *nodefile) : Expected<HostList>(text.error());
    if (!hosts) {
      return check_error(name, job + ": PBS_NODEFILE " + *nodefile + " cannot be read: " + hosts.error().message,
                         "run inside the job (qsub -I) or unset the stale PBS_NODEFILE");
    }
    allocated = std::move(*hosts);
    allocated_from = "PBS_NODEFILE";
  }
  if (!allocated || allocated_from == c.host_source.origin) {
    return check_ok(name, job + ": " + from);
  }
  const auto mine = short_names(c.hosts);
  const auto theirs = short_names(*allocated);
  std::vector<std::string> outside;
  for (const auto& h : mine) {
    if (theirs.count(h) == 0) {
      outside.push_back(h);
    }
  }
  if (!outside.empty()) {
    return check_error(name,
                       job + ": " + c.host_source.origin + " lists " + (outside.size() == 1 ? "a host" : "hosts") +
                           " outside the allocation in " + allocated_from + ": " + names_of(outside),
                       "use the job's own host list (unset " + c.host_source.origin +
                           " or pass --hostfile with allocated hosts only)");
  }
  if (mine.size() < theirs.size()) {
    return check_warning(name,
                         job + ": " + from + " uses " + std::to_string(mine.size()) + " of the " +
                             std::to_string(theirs.size()) + " allocated hosts in " + allocated_from,
                         "intended? launch runs only on the hosts of " + c.host_source.origin);
  }
  return check_ok(name, job + ": " + from + ", consistent with " + allocated_from);
}

CheckResult check_machine(const Env& /*env*/, const LocalFacts& facts) {
  const std::string name = "machine";
  if (!facts.machines) {
    return check_error(name, "machine profiles cannot be loaded: " + facts.machines_error,
                       "fix the config file named above (docs/machines.md)");
  }
  if (!facts.cluster) {
    return check_error(name, "no machine profile: " + facts.cluster_error, "see the scheduler check");
  }
  const auto& c = *facts.cluster;
  const std::string gpus = count_of(c.gpus.per_node, "GPU") + " per node (" + c.gpus.detail + ")";
  switch (c.machine_how) {
    case MachineEvidence::named:
    case MachineEvidence::hostname:
    case MachineEvidence::signal:
      return check_ok(name, c.machine.name + " (" + c.machine_reason + "); " + gpus);
    case MachineEvidence::guessed:
      return check_warning(name, c.machine.name + " is a guess (" + c.machine_reason + "); " + gpus,
                           "set EZPZ_MACHINE=" + c.machine.name + " if this is " + c.machine.name +
                               ", or EZPZ_MACHINE=local if it is not (docs/machines.md)");
    case MachineEvidence::fallback:
      break;
  }
  if (c.scheduler != Scheduler::local) {
    return check_warning(name,
                         "no machine profile for this " + std::string(to_string(c.scheduler)) + " job (" +
                             c.machine_reason + "): generic settings (no CPU or GPU binding)",
                         "set EZPZ_MACHINE to one of " + join(facts.machines->names(), ", ") +
                             " or add a [[machine]] to ~/.config/ezpz/config.toml (docs/machines.md)");
  }
  return check_ok(name, c.machine.name + " (" + c.machine_reason + "); " + gpus);
}

std::string launcher_flavour(std::string_view text) {
  const std::string lower = to_lower(text);
  auto version_after = [&](std::size_t from) {
    const auto start = lower.find_first_of("0123456789", from);
    if (start == std::string::npos) {
      return std::string();
    }
    const auto end = lower.find_first_not_of("0123456789.", start);
    std::string v = lower.substr(start, end == std::string::npos ? std::string::npos : end - start);
    while (!v.empty() && v.back() == '.') {
      v.pop_back();
    }
    return v;
  };
  auto named = [&](const char* flavour, std::size_t at) {
    auto v = version_after(at);
    return v.empty() ? std::string(flavour) : std::string(flavour) + " " + v;
  };
  std::size_t at;
  if ((at = lower.find("open mpi")) != std::string::npos || (at = lower.find("openrte")) != std::string::npos ||
      (at = lower.find("open-mpi")) != std::string::npos) {
    return named("Open MPI", at);
  }
  if ((at = lower.find("intel(r) mpi")) != std::string::npos || (at = lower.find("intel mpi")) != std::string::npos) {
    return named("Intel MPI", lower.find("version", at) != std::string::npos ? lower.find("version", at) : at);
  }
  if ((at = lower.find("pals")) != std::string::npos) {
    return named("Cray PALS", at);
  }
  if ((at = lower.find("slurm")) != std::string::npos) {
    return named("Slurm", at);
  }
  if ((at = lower.find("mpich version:")) != std::string::npos || (at = lower.find("hydra")) != std::string::npos ||
      (at = lower.find("mpich")) != std::string::npos) {
    if (auto v = lower.find("mpich version:"); v != std::string::npos) {
      at = v;
    }
    return named("MPICH", at);
  }
  return "";
}

CheckResult check_launcher(const Env& env, const SystemProbe& probe, const LocalFacts& facts) {
  (void)env;
  const std::string name = "launcher";
  if (!facts.cluster) {
    return check_error(name, "no launcher chosen: " + facts.cluster_error, "see the scheduler check");
  }
  const auto& c = *facts.cluster;
  LaunchRequest request;
  request.hostfile = facts.hostfile;
  const auto inventory = find_launchers(probe);
  auto choice = choose_launcher(request, c, inventory);
  if (!choice) {
    return check_error(name, choice.error().message, "install or load an MPI (module load ...), or see docs/launch.md");
  }
  if (choice->program == "local") {
    if (c.hosts.size() > 1) {
      return check_error(name,
                         "no mpiexec, mpirun or srun on PATH, and the job has " + std::to_string(c.hosts.size()) +
                             " hosts: the built-in launcher runs on this host only",
                         "load an MPI (module load ...) or put mpiexec on PATH");
    }
    return check_ok(name, "built-in launcher (no MPI needed on one host)");
  }
  const LauncherProgram* program = choice->program == "mpiexec"  ? (inventory.mpiexec ? &*inventory.mpiexec : nullptr)
                                   : choice->program == "mpirun" ? (inventory.mpirun ? &*inventory.mpirun : nullptr)
                                                                 : (inventory.srun ? &*inventory.srun : nullptr);
  const std::string path = program && program->path ? *program->path : choice->program;
  const std::string style(to_string(choice->style));
  auto out = probe.run_program({path, "--version"}, {}, {}, 5);
  if (!out || out->timed_out) {
    return check_warning(name,
                         choice->program + " (" + path + ", " + style + " flags) did not answer --version" +
                             (out ? std::string(" in 5 s") : ": " + out.error().message),
                         "check it runs: " + path + " --version");
  }
  const auto flavour = launcher_flavour(out->output);
  const std::string base = choice->program + " at " + path + ": " + (flavour.empty() ? "unknown MPI" : flavour) +
                           ", launched with " + style + " flags";
  const bool mismatch = (flavour.rfind("Open MPI", 0) == 0 && choice->style != LauncherStyle::openmpi) ||
                        (flavour.rfind("MPICH", 0) == 0 && choice->style != LauncherStyle::mpich &&
                         choice->style != LauncherStyle::sophia) ||
                        (flavour.rfind("Slurm", 0) == 0 && choice->style != LauncherStyle::srun);
  if (mismatch) {
    return check_warning(name, base + ": the flags do not match the MPI",
                         "pass --launcher, or set the machine's launcher style in ~/.config/ezpz/config.toml");
  }
  if (choice->warning) {
    return check_warning(name, base + "; " + *choice->warning, "see docs/launch.md");
  }
  return check_ok(name, base);
}

CheckResult check_space(const Env& env, const FileProbe& probe) {
  const std::string name = "space";
  const auto active = active_env(env);
  std::optional<unsigned long long> need;
  if (active) {
    need = probe.tree_bytes(probe.real_path(*active));
  }
  const auto tmp = probe.disk_space("/tmp");
  const auto shm = probe.disk_space("/dev/shm");
  std::string msg = "/tmp " + (tmp ? human_bytes(tmp->free_bytes) + " free" : std::string("missing")) + ", /dev/shm " +
                    (shm ? human_bytes(shm->free_bytes) + " free" : std::string("missing"));
  if (need) {
    msg += "; the active env takes " + human_bytes(*need);
  }
  if (!tmp) {
    return check_error(name, msg, "ranks and yeet need /tmp: ask the admins, or set TMPDIR to a writable directory");
  }
  if (need && tmp->free_bytes < *need) {
    return check_error(name, msg + ": a yeet of it to /tmp cannot fit",
                       "free space in /tmp or yeet it elsewhere (ezpz yeet --dst /dev/shm/<name>)");
  }
  if (need && tmp->free_bytes < 2 * *need) {
    return check_warning(name, msg + ": under twice the env, so replacing an earlier copy may not fit",
                         "remove old copies in /tmp (ls -d /tmp/*/pyvenv.cfg)");
  }
  if (!shm) {
    return check_warning(name, msg, "PyTorch DataLoader workers and NCCL use /dev/shm: ask the admins to mount it");
  }
  if (shm->free_bytes < (1ULL << 30)) {
    return check_warning(name, msg + ": under 1 GiB in /dev/shm",
                         "DataLoader workers and NCCL's shared memory need room there: free /dev/shm or use fewer "
                         "workers");
  }
  return check_ok(name, msg);
}

CheckResult check_ulimits(const HostProbe& probe, const LocalFacts& facts) {
  const std::string name = "ulimits";
  const auto nofile = probe.resource_limit("nofile");
  const auto memlock = probe.resource_limit("memlock");
  auto text = [](unsigned long long v, bool bytes) {
    return v == ResourceLimit::kUnlimited ? std::string("unlimited") : bytes ? human_bytes(v) : std::to_string(v);
  };
  const std::string msg = "ulimit -n " + text(nofile.soft, false) + " (hard " + text(nofile.hard, false) +
                          "), ulimit -l " + text(memlock.soft, true) + " (hard " + text(memlock.hard, true) + ")";
  if (nofile.soft < 4096) {
    return check_warning(name, msg + ": few file descriptors for DataLoader workers and sockets",
                         nofile.hard >= 4096 ? "ulimit -n " + text(nofile.hard, false) + " in the job script"
                                             : "ask the admins to raise nofile (the hard limit is low)");
  }
  const bool multi_node = facts.cluster && (facts.cluster->hosts.size() > 1 || facts.cluster->machine.name != "local");
  if (memlock.soft != ResourceLimit::kUnlimited && multi_node) {
    return check_warning(name, msg + ": RDMA (InfiniBand, Slingshot, NCCL/CCL over libfabric) pins memory",
                         memlock.hard == ResourceLimit::kUnlimited
                             ? "ulimit -l unlimited in the job script"
                             : "ask the admins for memlock unlimited (/etc/security/limits.conf)");
  }
  return check_ok(name, msg);
}

CheckResult check_accelerators(const Env& env, const FileProbe& probe, const LocalFacts& facts) {
  const std::string name = "accelerators";
  int nvidia = 0;
  bool kfd = false;
  for (const auto& n : probe.list_dir("/dev")) {
    if (n.rfind("nvidia", 0) == 0 && n.size() > 6 && n.find_first_not_of("0123456789", 6) == std::string::npos) {
      ++nvidia;
    }
    kfd = kfd || n == "kfd";
  }
  int render = 0;
  for (const auto& n : probe.list_dir("/dev/dri")) {
    render += n.rfind("renderD", 0) == 0 ? 1 : 0;
  }
  std::string found;
  int count = 0;
  if (nvidia > 0) {
    found = count_of(nvidia, "NVIDIA GPU") + " (/dev/nvidiaN)";
    count = nvidia;
  } else if (kfd && render > 0) {
    found = count_of(render, "AMD GPU") + " (/dev/kfd, /dev/dri/renderD*)";
    count = render;
  } else if (render > 0) {
    found = count_of(render, "GPU render node") + " (/dev/dri/renderD*: Intel XPU or other)";
    count = render;
  }
  // What the job's GPU count says, else (outside a job: a login node?) what the machine's compute nodes have.
  int expected = 0;
  std::string expected_from;
  if (facts.cluster && facts.cluster->gpus.known && facts.cluster->gpus.source != "device files") {
    expected = facts.cluster->gpus.per_node;
    expected_from = facts.cluster->gpus.detail;
  } else if (facts.cluster && facts.cluster->machine.gpus_per_node > 0) {
    expected = facts.cluster->machine.gpus_per_node;
    expected_from = "machine profile " + facts.cluster->machine.name;
  }
  const auto device = to_lower(env.get("TORCH_DEVICE").value_or(""));
  if (count == 0) {
    if (device == "cpu") {
      return check_ok(name, "no accelerator device files; TORCH_DEVICE=cpu");
    }
    if (expected > 0) {
      return check_warning(name,
                           "no accelerator device files, but " + count_of(expected, "GPU") + " per node " +
                               (expected == 1 ? "is" : "are") + " expected (" + expected_from + "): a login node?",
                           "run on a compute node, or check the driver (nvidia-smi, xpu-smi, rocm-smi)");
    }
    if (!device.empty()) {  // the companion library and the Python ezpz read it: it would fail
      return check_warning(name, "TORCH_DEVICE=" + device + " but no accelerator device files",
                           "unset TORCH_DEVICE (or set it to cpu), or run on a node with that device");
    }
    return check_ok(name, "no accelerator device files and none expected: ranks run on the CPU with gloo");
  }
  if (expected > 0 && count < expected) {
    return check_warning(name, found + ", but " + std::to_string(expected) + " expected (" + expected_from + ")",
                         "check the node's GPUs (nvidia-smi, xpu-smi) or set NGPU_PER_HOST");
  }
  if (auto mask = env.get("CUDA_VISIBLE_DEVICES"); mask && nvidia > 0) {
    for (auto item : split(*mask, ',')) {
      auto n = parse_positive_int(trim(item));
      if (n && *n >= nvidia) {
        return check_error(name, found + ", but CUDA_VISIBLE_DEVICES=" + *mask + " names GPU " + std::to_string(*n),
                           "unset CUDA_VISIBLE_DEVICES (launch --gpu-bind sets it per rank)");
      }
    }
  }
  return check_ok(name, found);
}

namespace {
/// NCCL_SOCKET_IFNAME syntax: "^" excludes, "=" matches exactly, else a prefix.
bool interface_matches(std::string_view spec, const std::vector<std::string>& interfaces) {
  if (spec.empty() || spec[0] == '^') {
    return true;  // an exclusion list cannot name a missing interface
  }
  for (auto item : split(spec, ',')) {
    const bool exact = !item.empty() && item[0] == '=';
    const auto want = exact ? item.substr(1) : item;
    for (const auto& i : interfaces) {
      if (exact ? i == want : i.rfind(want, 0) == 0) {
        return true;
      }
    }
  }
  return false;
}
}  // namespace

CheckResult check_network_env(const Env& env, const FileProbe& probe, const LocalFacts& facts) {
  const std::string name = "network-env";
  std::vector<std::string> problems, remedies;
  CheckStatus status = CheckStatus::ok;
  auto add = [&](CheckStatus s, std::string problem, std::string remedy) {
    status = std::max(status, s);
    problems.push_back(std::move(problem));
    remedies.push_back(std::move(remedy));
  };
  const auto interfaces = probe.list_dir("/sys/class/net");
  for (const char* var : {"NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "CCL_SOCKET_IFNAME"}) {
    if (auto v = env.get(var); v && !interfaces.empty() && !interface_matches(*v, interfaces)) {
      add(CheckStatus::error,
          std::string(var) + "=" + *v + " matches no network interface here (" + names_of(interfaces) +
              "): init hangs or fails",
          "unset " + std::string(var) + " or name an interface from `ip link`");
    }
  }
  auto is_set_to = [&](const char* var, std::initializer_list<const char*> values) {
    auto v = env.get(var);
    return v && std::any_of(values.begin(), values.end(), [&](const char* x) { return to_lower(*v) == x; });
  };
  for (const char* var : {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING"}) {
    if (is_set_to(var, {"0"})) {
      add(CheckStatus::warning,
          std::string(var) + "=0: a failed rank leaves the others waiting in a collective forever",
          "unset " + std::string(var));
    }
  }
  if (is_set_to("NCCL_IB_DISABLE", {"1"})) {
    add(CheckStatus::warning, "NCCL_IB_DISABLE=1: NCCL falls back to TCP sockets between nodes",
        "unset NCCL_IB_DISABLE unless the fabric is broken");
  }
  for (const char* var : {"NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE"}) {
    if (is_set_to(var, {"1"})) {
      add(CheckStatus::warning, std::string(var) + "=1: GPUs of a node talk through host memory (slow)",
          "unset " + std::string(var));
    }
  }
  if (is_set_to("NCCL_DEBUG", {"trace"})) {
    add(CheckStatus::warning, "NCCL_DEBUG=TRACE: every collective is logged (slow, huge logs)",
        "use NCCL_DEBUG=INFO or WARN");
  }
  if (is_set_to("CUDA_LAUNCH_BLOCKING", {"1"})) {
    add(CheckStatus::warning, "CUDA_LAUNCH_BLOCKING=1: every kernel launch waits (debugging only)",
        "unset CUDA_LAUNCH_BLOCKING");
  }
  const std::string machine = facts.cluster ? facts.cluster->machine.name : "local";
  const bool slingshot = machine == "aurora" || machine == "sunspot" || machine == "polaris" || machine == "frontier" ||
                         machine == "perlmutter" || machine == "sirius";
  if (slingshot && is_set_to("FI_PROVIDER", {"tcp", "sockets", "udp", "tcp;ofi_rxm", "verbs"})) {
    add(CheckStatus::warning,
        "FI_PROVIDER=" + *env.get("FI_PROVIDER") + " on " + machine + " (Slingshot): libfabric skips the cxi NIC",
        "unset FI_PROVIDER (cxi is the default) unless support told you otherwise");
  }
  if (is_set_to("CCL_ATL_TRANSPORT", {"mpi"}) && slingshot && machine == "aurora") {
    add(CheckStatus::warning, "CCL_ATL_TRANSPORT=mpi on aurora: oneCCL over MPI instead of libfabric",
        "unset CCL_ATL_TRANSPORT (ofi)");
  }
  if (problems.empty()) {
    int set = 0;
    for (const auto& [k, v] : env.vars) {
      set += (k.rfind("NCCL_", 0) == 0 || k.rfind("CCL_", 0) == 0 || k.rfind("FI_", 0) == 0) && !v.empty() ? 1 : 0;
    }
    return check_ok(name, "no NCCL/CCL/libfabric variable known to hang or slow a job (" +
                              count_of(set, "such variable") + " set)");
  }
  return CheckResult{name, status, join(problems, "; "), join(remedies, "; "), "", 0};
}

CheckResult check_ezpz(const Env& env, const LocalFacts& facts) {
  const std::string name = "ezpz";
  const auto exe = env.self_exe.empty() ? std::string("ezpz") : env.self_exe;
  const auto m = mount_of(facts.mounts, exe);
  const std::string msg = "ezpz " + facts.version + " at " + exe + " (" + (m ? m->type : "unknown filesystem") + ")";
  const auto hosts = facts.cluster ? facts.cluster->hosts.size() : 1;
  if (hosts > 1 && m && !is_shared_fs(m->type)) {
    return check_warning(
        name,
        msg + ": not on a shared filesystem, and launch's rank shim runs it on all " + std::to_string(hosts) + " hosts",
        "put ezpz on a shared filesystem, or check each node with ezpz doctor --nodes");
  }
  return check_ok(name, msg);
}

const std::vector<LocalCheck>& local_checks() {
  using E = const Env&;
  using P = const SystemProbe&;
  using F = const LocalFacts&;
  static const std::vector<LocalCheck> checks = {
      {"scheduler", [](E e, P p, F f) { return check_scheduler(e, p, f); }},
      {"machine", [](E e, P, F f) { return check_machine(e, f); }},
      {"launcher", [](E e, P p, F f) { return check_launcher(e, p, f); }},
      {"python", [](E e, P p, F f) { return check_python(e, p, f); }},
      {"torch", [](E e, P p, F) { return check_torch(e, p); }},
      {"space", [](E e, P p, F) { return check_space(e, p); }},
      {"ulimits", [](E, P p, F f) { return check_ulimits(p, f); }},
      {"wandb", [](E e, P p, F) { return check_wandb(e, p); }},
      {"accelerators", [](E e, P p, F f) { return check_accelerators(e, p, f); }},
      {"network-env", [](E e, P p, F f) { return check_network_env(e, p, f); }},
      {"net-plugin", [](E e, P p, F f) { return check_net_plugin(e, p, f); }},
      {"modules", [](E e, P, F f) { return check_modules(e, f); }},
      {"gpu-mpi", [](E e, P p, F) { return check_gpu_mpi(e, p); }},
      {"munge", [](E, P p, F) { return check_munge(p); }},
      {"failover", [](E e, P p, F) { return check_failover(e, p); }},
      {"ezpz", [](E e, P, F f) { return check_ezpz(e, f); }},
      {"user",
       [](E e, P p, F) {
         const auto passwd = p.read_file("/etc/passwd");
         const auto nsswitch = p.read_file("/etc/nsswitch.conf");
         return check_user(e, passwd ? *passwd : std::string(), nsswitch ? *nsswitch : std::string());
       }},
  };
  return checks;
}

}  // namespace ezpz::core
