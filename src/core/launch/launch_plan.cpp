#include "core/launch/launch_plan.hpp"

#include <algorithm>

#include "core/base/strings.hpp"
#include "core/launch/rank_output.hpp"

namespace ezpz::core {
namespace {

const std::optional<LauncherProgram>& program_slot(const LauncherInventory& inv, std::string_view name) {
  if (name == "srun") {
    return inv.srun;
  }
  return name == "mpirun" ? inv.mpirun : inv.mpiexec;
}

bool found(const std::optional<LauncherProgram>& p) {
  return p && p->path;
}

/// A named MPI program with its dialect: the profile's when it names the same program,
/// else what detection saw, else a guess from the name.
LauncherChoice mpi_choice(const std::string& program, const MachineProfile& machine, const LauncherInventory& inv) {
  LauncherChoice c{program, LauncherStyle::mpich, std::nullopt};
  const auto& slot = program_slot(inv, program);
  if (machine.launcher == program && machine.style != LauncherStyle::auto_detect) {
    c.style = machine.style;
  } else if (found(slot)) {
    c.style = slot->style;
  } else if (program == "srun") {
    c.style = LauncherStyle::srun;
  } else if (program == "mpirun") {
    c.style = LauncherStyle::openmpi;
  }
  if (!found(slot)) {
    c.warning = program + " is not on PATH here: load the MPI module (or run inside the job) before launching";
  }
  return c;
}

std::string strip_bind_prefix(std::string value) {
  for (std::string_view prefix : {"--cpu-bind=", "--cpu-bind", "-cpu-bind="}) {
    if (starts_with(value, prefix)) {
      return std::string(trim(std::string_view(value).substr(prefix.size())));
    }
  }
  return value;
}

bool has_flag(const std::vector<std::string>& args, std::initializer_list<std::string_view> names) {
  return std::any_of(args.begin(), args.end(), [&](const std::string& a) {
    return std::any_of(names.begin(), names.end(),
                       [&](std::string_view n) { return a == n || starts_with(a, std::string(n) + "="); });
  });
}

/// The launcher's own flag for labelling output lines with the rank.
std::optional<std::string> label_flag(LauncherStyle style) {
  switch (style) {
    case LauncherStyle::pals:
    case LauncherStyle::srun:
      return "--label";
    case LauncherStyle::openmpi:
    case LauncherStyle::sophia:
      return "--tag-output";
    case LauncherStyle::mpich:
      return "-prepend-rank";
    case LauncherStyle::auto_detect:
    case LauncherStyle::local:
      break;
  }
  return std::nullopt;
}

Expected<RankContext> rank_context(const LaunchRequest& request, const ClusterInfo& cluster, const Topology& topo,
                                   bool builtin) {
  RankContext ctx;
  ctx.nprocs = topo.nprocs;
  ctx.ppn = topo.ppn;
  ctx.nhosts = topo.nhosts;
  ctx.master_addr = builtin ? "127.0.0.1" : cluster.master_addr;
  ctx.master_port = cluster.master_port;
  ctx.gpus_per_node = cluster.gpus.per_node;
  std::string want = request.gpu_bind.value_or("none");
  if (want == "auto") {
    want = cluster.machine.gpu_bind.empty() ? "none" : cluster.machine.gpu_bind;
  }
  auto kind = gpu_bind_from_string(want);
  if (!kind) {
    return usage_error("--gpu-bind " + want + " is not a binding ezpz knows: use auto, cuda, ze, rocr or none");
  }
  ctx.gpu_bind = *kind;
  // The machine's scheme (Polaris: reversed) comes with "auto"; a named kind is plain order.
  ctx.gpu_reverse = cluster.machine.gpu_reverse && request.gpu_bind == "auto";
  ctx.run_id = request.run_id;
  ctx.record_dir = request.record_dir;
  ctx.max_restarts = request.max_restarts;
  // The built-in launcher labels lines itself; under MPI launchers the rank hub (or the shim).
  ctx.label = request.label && !builtin;
  ctx.log_dir = request.log_dir.value_or(request.record_dir);
  ctx.console = request.console;
  return ctx;
}

void append_env_forwarding(std::vector<std::string>& argv,
                           const std::vector<std::pair<std::string, std::string>>& env) {
  for (const auto& [name, value] : env) {
    argv.emplace_back("-x");
    argv.push_back(name);
  }
}

/// The guess warning, and the environment the profile adds: `env`, and above its node
/// threshold `env_at_scale` (which wins over `env`); a name the user's environment sets,
/// even to "", is left alone.
void add_machine_env(LaunchPlan& plan, const Env& env, const ClusterInfo& cluster) {
  const auto& machine = cluster.machine;
  if (cluster.machine_how == MachineEvidence::guessed) {
    plan.warnings.push_back("guessed machine " + machine.name + ": " + cluster.machine_reason + ": set EZPZ_MACHINE=" +
                            machine.name + " (or EZPZ_MACHINE=local) or pass --machine to settle it");
  }
  if (!cluster.machine_forced && plan.style != machine.style) {
    return;
  }
  auto add = [&](const std::vector<std::pair<std::string, std::string>>& list) {
    for (const auto& [name, value] : list) {
      if (env.vars.count(name) != 0) {
        continue;
      }
      const auto key = name;  // clang 14 cannot capture a structured binding
      auto it = std::find_if(plan.env.begin(), plan.env.end(), [&key](const auto& kv) { return kv.first == key; });
      if (it != plan.env.end()) {
        it->second = expand_machine_value(value, env);
      } else {
        plan.env.emplace_back(name, expand_machine_value(value, env));
      }
    }
  };
  add(machine.env);
  if (machine.at_scale_nodes > 0 && plan.topology.nhosts > machine.at_scale_nodes) {
    add(machine.env_at_scale);
  }
}

/// Which of the user's numbers made the processes per node (for messages).
std::string ppn_request(const TopologyRequest& t, int ppn) {
  if (t.ppn) {
    return "--ppn " + std::to_string(*t.ppn);
  }
  if (t.nprocs) {
    return "-n " + std::to_string(*t.nprocs) + " (" + std::to_string(ppn) + " per node)";
  }
  return std::to_string(ppn) + " processes per node";
}

/// srun in an allocation starts no more tasks per node than the job has CPUs for (unless
/// overcommitted): refuse such a plan with the fix; past the job's --ntasks-per-node, warn.
Expected<void> check_srun_ppn(const LaunchRequest& request, const ClusterInfo& cluster, LaunchPlan& plan) {
  const auto& slurm = cluster.slurm;
  const int ppn = plan.topology.ppn;
  const auto cpus = slurm.cpu_limit();
  if (cpus && ppn > *cpus && !has_flag(request.launcher_args, {"-O", "--overcommit"})) {
    return usage_error(ppn_request(request.topology, ppn) + " is more than the " + std::to_string(*cpus) +
                       " per node srun starts in this job (SLURM_JOB_CPUS_PER_NODE=" + slurm.cpus_text +
                       (slurm.cpus_per_task > 1 ? ", SLURM_CPUS_PER_TASK=" + std::to_string(slurm.cpus_per_task) : "") +
                       "): use --ppn " + std::to_string(*cpus) +
                       " or fewer, or allocate with --ntasks-per-node=" + std::to_string(ppn));
  }
  if (slurm.ntasks_per_node && ppn > *slurm.ntasks_per_node) {
    plan.warnings.push_back(ppn_request(request.topology, ppn) + ": srun ignores the job's --ntasks-per-node=" +
                            std::to_string(*slurm.ntasks_per_node) + " (SLURM_NTASKS_PER_NODE)");
  }
  return {};
}

}  // namespace

int default_ppn(const ClusterInfo& cluster, LauncherStyle style) {
  int per_node = cluster.gpus.per_node;
  if (style == LauncherStyle::local || cluster.scheduler != Scheduler::slurm) {
    return per_node;
  }
  const auto limit = slurm_ppn_limit(cluster.slurm);
  if (limit.value > 0 && limit.value < per_node) {
    per_node = limit.value;
  }
  if (!cluster.gpus.known && cluster.slurm.ntasks_per_node) {
    per_node = limit.value;  // no GPUs: the job's own tasks per node decide (within its CPUs)
  }
  return per_node;
}

namespace {

/// How many processes on which hosts: the user's numbers, else GPUs per node within what the
/// allocation allows (Slurm's tasks and CPUs per node).
Expected<void> plan_topology(const LaunchRequest& request, const ClusterInfo& cluster, LaunchPlan& plan) {
  const bool builtin = plan.style == LauncherStyle::local;
  // The built-in launcher starts processes on this host only.
  const int available = builtin ? 1 : static_cast<int>(cluster.hosts.size());
  if (!builtin && cluster.scheduler == Scheduler::slurm) {
    plan.ppn_limit = slurm_ppn_limit(cluster.slurm);
  }
  const int per_node = default_ppn(cluster, plan.style);
  auto topo = resolve_topology(request.topology, available, per_node);
  if (!topo) {
    if (builtin && request.topology.nhosts && *request.topology.nhosts > 1) {
      return usage_error("--nhosts " + std::to_string(*request.topology.nhosts) +
                         " needs an MPI launcher or a scheduler: the built-in local launcher runs on this host only");
    }
    return topo.error();
  }
  plan.topology = *topo;
  if (cluster.gpus.known && cluster.scheduler != Scheduler::local && topo->ppn > cluster.gpus.per_node) {
    plan.warnings.push_back(std::to_string(topo->ppn) + " processes per node is more than the " +
                            std::to_string(cluster.gpus.per_node) + " GPUs per node (" + cluster.gpus.detail +
                            "): ranks will share GPUs");
  }
  if (plan.style == LauncherStyle::srun && cluster.scheduler == Scheduler::slurm) {
    EZPZ_TRY(check_srun_ppn(request, cluster, plan));
  }
  plan.hosts.assign(cluster.hosts.begin(), cluster.hosts.begin() + (builtin ? 1 : topo->nhosts));
  if (cluster.host_source.kind == HostSource::Kind::file && !builtin) {
    plan.hostfile = cluster.host_source.value;
  }
  return {};
}

/// HPE PALS mpiexec (Aurora, SunSpot, Polaris, Sirius).
void pals_argv(const LaunchRequest& request, const ClusterInfo& cluster, LaunchPlan& plan) {
  const auto& t = plan.topology;
  plan.argv = {plan.launcher, "--envall", "--line-buffer", "--np=" + std::to_string(t.nprocs),
               "--ppn=" + std::to_string(t.ppn)};
  if (!plan.hostfile.empty()) {
    plan.argv.push_back("--hostfile=" + plan.hostfile);
  }
  if (plan.cpu_bind.empty()) {
    return;
  }
  plan.argv.push_back("--cpu-bind=" + plan.cpu_bind);
  if (plan.cpu_bind == "depth" && cluster.machine.depth > 0 && !has_flag(request.launcher_args, {"--depth", "-d"})) {
    plan.argv.push_back("--depth=" + std::to_string(cluster.machine.depth));
  }
}

/// Sophia's Open MPI mpirun: space-separated values, which every Open MPI accepts
/// (4.1 rejects -n=16 and --hostfile=F).
void sophia_argv(const Env& env, LaunchPlan& plan) {
  const auto& t = plan.topology;
  plan.argv = {plan.launcher, "-n", std::to_string(t.nprocs), "-N", std::to_string(t.ppn)};
  if (env.uid == 0) {
    plan.argv.emplace_back("--allow-run-as-root");
  }
  if (!plan.hostfile.empty()) {
    plan.argv.insert(plan.argv.end(), {"--hostfile", plan.hostfile});
  }
  plan.argv.insert(plan.argv.end(), {"-x", "PATH", "-x", "LD_LIBRARY_PATH"});
  append_env_forwarding(plan.argv, plan.env);
}

void srun_argv(const LaunchRequest& request, const ClusterInfo& cluster, LaunchPlan& plan) {
  const auto& t = plan.topology;
  plan.argv = {plan.launcher, "-N" + std::to_string(t.nhosts), "-n" + std::to_string(t.nprocs)};
  // CPUs for each rank (its DataLoader workers): without -c a step's task gets one.
  const auto profile_cpus = plan.style == cluster.machine.style ? cluster.machine.cpus_per_node : 0;
  if (const auto c = srun_cpus_per_task(cluster.slurm, profile_cpus, t.ppn);
      c && !has_flag(request.launcher_args, {"-c", "--cpus-per-task"})) {
    plan.argv.push_back("--cpus-per-task=" + std::to_string(c->value));
  }
  const auto& own = cluster.machine.launcher_args;
  if (cluster.gpus.known && !has_flag(request.launcher_args, {"--gpus-per-node", "--gpus-per-task", "--gpus", "-G"}) &&
      !has_flag(own, {"--gpus-per-node", "--gpus-per-task", "--gpus", "-G"})) {
    // One GPU per rank; ranks beyond the node's GPUs share them (a step asking for more is refused).
    plan.argv.push_back("--gpus-per-node=" + std::to_string(std::min(t.ppn, cluster.gpus.per_node)));
  }
  if (request.hostfile || request.pin_hosts || t.nhosts < static_cast<int>(cluster.hosts.size())) {
    plan.argv.push_back("--nodelist=" + join(plan.hosts, ","));
  }
  if (!plan.cpu_bind.empty()) {
    plan.argv.push_back("--cpu-bind=" + plan.cpu_bind);
  }
}

void openmpi_argv(const Env& env, LaunchPlan& plan) {
  const auto& t = plan.topology;
  plan.argv = {plan.launcher, "-np", std::to_string(t.nprocs)};
  if (env.uid == 0) {
    plan.argv.emplace_back("--allow-run-as-root");
  }
  if (!plan.hostfile.empty()) {
    plan.argv.insert(plan.argv.end(),
                     {"--hostfile", plan.hostfile, "--map-by", "ppr:" + std::to_string(t.ppn) + ":node"});
  } else {
    plan.argv.emplace_back("--oversubscribe");
  }
  append_env_forwarding(plan.argv, plan.env);
}

void mpich_argv(LaunchPlan& plan) {
  const auto& t = plan.topology;
  plan.argv = {plan.launcher, "-n", std::to_string(t.nprocs), "-ppn", std::to_string(t.ppn)};
  if (!plan.hostfile.empty()) {
    plan.argv.insert(plan.argv.end(), {"-f", plan.hostfile});
  }
}

/// The launcher's argv up to its own flags, in its dialect. False when it ignores the CPU binding.
bool launcher_argv(const LaunchRequest& request, const Env& env, const ClusterInfo& cluster, LaunchPlan& plan) {
  switch (plan.style) {
    case LauncherStyle::pals:
    case LauncherStyle::auto_detect:
      pals_argv(request, cluster, plan);
      return true;
    case LauncherStyle::sophia:
      sophia_argv(env, plan);
      break;
    case LauncherStyle::srun:
      srun_argv(request, cluster, plan);
      return true;
    case LauncherStyle::openmpi:
      openmpi_argv(env, plan);
      break;
    case LauncherStyle::mpich:
      mpich_argv(plan);
      break;
    case LauncherStyle::local:
      break;
  }
  return plan.cpu_bind.empty();
}
}  // namespace

LauncherInventory find_launchers(const SystemProbe& probe, const std::optional<std::string>& only) {
  LauncherInventory inv;
  auto find = [&](const std::string& name, std::optional<LauncherProgram>& slot) {
    if (only && *only != name) {
      return;
    }
    if (auto path = probe.find_program(name)) {
      slot = LauncherProgram{name, path, name == "srun" ? LauncherStyle::srun : detect_mpi_style(probe, *path)};
    }
  };
  find("mpiexec", inv.mpiexec);
  find("mpirun", inv.mpirun);
  find("srun", inv.srun);
  return inv;
}

Expected<LauncherChoice> choose_launcher(const LaunchRequest& request, const ClusterInfo& cluster,
                                         const LauncherInventory& inventory) {
  const auto& machine = cluster.machine;
  if (request.launcher) {
    const auto& name = *request.launcher;
    if (name == "local") {
      return LauncherChoice{"local", LauncherStyle::local, std::nullopt};
    }
    if (name == "mpiexec" || name == "mpirun" || name == "srun") {
      return mpi_choice(name, machine, inventory);
    }
    return usage_error("--launcher " + name + " is not a launcher ezpz knows: use mpiexec, mpirun, srun or local");
  }

  std::optional<std::string> note;
  if (machine.launcher != "auto") {
    if (profile_applies(machine, cluster.machine_forced, cluster.scheduler)) {
      return mpi_choice(machine.launcher, machine, inventory);
    }
    const std::string sched(to_string(*machine.scheduler));
    note = "no " + sched + " job found on " + machine.name + ": running on this node only";
    if (cluster.scheduler == Scheduler::local) {
      // The machine's launcher outside a job would run on this (login) node or ask for a new
      // allocation: the built-in launcher says plainly what it does.
      return LauncherChoice{"local", LauncherStyle::local,
                            *note + " with ezpz's built-in launcher (start a job first, e.g. " +
                                (sched == "slurm" ? "salloc" : "qsub -I") + ", to use " + machine.launcher + ")"};
    }
    *note += " (start a job first to use " + machine.launcher + ")";
  }

  LauncherChoice choice;
  switch (cluster.scheduler) {
    case Scheduler::slurm:
      choice = mpi_choice("srun", machine, inventory);
      break;
    case Scheduler::pbs:
      choice =
          mpi_choice(found(inventory.mpiexec) || !found(inventory.mpirun) ? "mpiexec" : "mpirun", machine, inventory);
      break;
    case Scheduler::local:
      // One host and no scheduler (a laptop, a workstation): the built-in launcher, even where
      // MPI is installed (whole lines, no banners, nothing left behind); an MPI launcher for a
      // hostfile of several hosts, or when asked for (--launcher).
      if (cluster.hosts.size() > 1 && found(inventory.mpirun)) {
        choice = mpi_choice("mpirun", machine, inventory);
      } else if (cluster.hosts.size() > 1 && found(inventory.mpiexec)) {
        choice = mpi_choice("mpiexec", machine, inventory);
      } else {
        choice = LauncherChoice{"local", LauncherStyle::local, std::nullopt};
      }
      break;
  }
  if (note) {
    choice.warning = note;
  }
  return choice;
}

Expected<LaunchPlan> plan_launch(const LaunchRequest& request, const Env& env, const ClusterInfo& cluster,
                                 const LauncherInventory& inventory) {
  if (request.command.empty()) {
    return usage_error("no command to launch: put it after --, e.g. ezpz launch -n 4 -- python3 train.py");
  }
  EZPZ_TRY_ASSIGN(auto choice, choose_launcher(request, cluster, inventory));
  LaunchPlan plan;
  plan.scheduler = cluster.scheduler;
  plan.machine = cluster.machine.name;
  plan.start_timeout_s = request.start_timeout_s.value_or(cluster.machine.start_timeout);
  plan.launcher = choice.program;
  plan.style = choice.style;
  if (choice.warning) {
    plan.warnings.push_back(*choice.warning);
  }
  const bool builtin = plan.style == LauncherStyle::local;
  if (builtin && !request.launcher_args.empty()) {
    return usage_error("launcher flag " + request.launcher_args.front() +
                       " needs an MPI launcher, but this runs ezpz's built-in local launcher: drop it or pass "
                       "--launcher mpirun/mpiexec/srun");
  }

  EZPZ_TRY(plan_topology(request, cluster, plan));

  // CPU binding: --cpu-bind > CPU_BIND > the machine's default.
  auto env_bind = env.get("CPU_BIND");
  if (request.cpu_bind) {
    plan.cpu_bind = strip_bind_prefix(*request.cpu_bind);
    if (env_bind) {
      plan.warnings.emplace_back("both --cpu-bind and CPU_BIND are set: using --cpu-bind=" + plan.cpu_bind);
    }
  } else if (env_bind) {
    plan.cpu_bind = strip_bind_prefix(*env_bind);
  } else if (plan.style == cluster.machine.style) {
    plan.cpu_bind = cluster.machine.cpu_bind;
  }

  add_machine_env(plan, env, cluster);

  const bool bind_used = launcher_argv(request, env, cluster, plan);
  auto& argv = plan.argv;
  EZPZ_TRY_ASSIGN(auto ctx, rank_context(request, cluster, plan.topology, builtin));
  plan.rank = ctx;
  plan.rank_env = request.rank_env;
  plan.label = request.label;
  if (request.label && !builtin && !request.rank_env) {
    if (auto flag = label_flag(plan.style)) {
      argv.push_back(*flag);  // no shim to label the lines: the launcher's own format
    }
  }
  if (request.rank_env && !builtin && plan.hosts.size() > 1 && node_local_binary(env.self_exe)) {
    plan.warnings.push_back("ezpz is at " + env.self_exe + ", node-local storage, and the rank shim runs it from " +
                            "that path on all " + std::to_string(plan.hosts.size()) +
                            " hosts: put ezpz on a shared filesystem (or at that path on every node)");
  }
  if (request.rank_env && request.omp_notice && plan.topology.ppn > 1 && !env.has("OMP_NUM_THREADS")) {
    plan.notes.push_back("OMP_NUM_THREADS=1 for every rank (" + std::to_string(plan.topology.ppn) +
                         " share a node), as torchrun sets it: export OMP_NUM_THREADS to tune it");
  }
  if (!bind_used) {
    plan.warnings.push_back("--cpu-bind=" + plan.cpu_bind + " is ignored by " + std::string(to_string(plan.style)) +
                            " " + plan.launcher + ": pass its own binding flag before --");
    plan.cpu_bind.clear();
  }
  if (plan.style == cluster.machine.style) {  // the machine's own flags, then the user's
    argv.insert(argv.end(), cluster.machine.launcher_args.begin(), cluster.machine.launcher_args.end());
  }
  argv.insert(argv.end(), request.launcher_args.begin(), request.launcher_args.end());
  if (request.rank_env && !builtin) {
    // Each rank runs this binary first: it turns the launcher's variables into
    // RANK, WORLD_SIZE, ... and runs the command (src/cli/rank_env.cpp).
    argv.push_back(env.self_exe.empty() ? "ezpz" : env.self_exe);
    argv.emplace_back("__rank-env");
    auto shim = rank_shim_args(plan.rank);
    if (plan.style == LauncherStyle::openmpi || plan.style == LauncherStyle::sophia) {
      // Open MPI carries only what -x names: the rank hub's address and secret (set at run time).
      argv.insert(argv.end() - 2, {"-x", std::string(kHubVar), "-x", std::string(kHubKeyVar)});
    }
    argv.insert(argv.end(), shim.begin(), shim.end());
    argv.emplace_back("--");
    for (auto name : inherited_rank_variables()) {
      plan.unset_env.emplace_back(name);
    }
  }
  argv.insert(argv.end(), request.command.begin(), request.command.end());
  return plan;
}

LaunchPlan plan_for_attempt(const LaunchPlan& plan, int attempt) {
  LaunchPlan out = plan;
  out.rank.restart_count = attempt;
  if (attempt > 0 && !plan.rank.record_dir.empty()) {
    out.rank.record_dir = plan.rank.record_dir + "/retry-" + std::to_string(attempt);
  }
  if (attempt > 0 && !plan.rank.log_dir.empty()) {
    out.rank.log_dir = plan.rank.log_dir + "/retry-" + std::to_string(attempt);  // one set per attempt
  }
  if (plan.rank_env && plan.style != LauncherStyle::local) {  // only a plan with a shim has its arguments
    out.argv = with_shim_args(plan.argv, out.rank);
  }
  return out;
}

EnvList local_rank_environment(const LaunchPlan& plan, const Env& env, int r) {
  EnvList vars = plan.env;
  if (plan.rank_env) {
    auto rank = rank_environment(env, plan.rank, planned_rank(r, plan.rank));
    vars.insert(vars.end(), rank.begin(), rank.end());
  }
  return vars;
}

}  // namespace ezpz::core
