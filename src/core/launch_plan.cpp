#include "core/launch_plan.hpp"

#include <algorithm>

#include "core/strings.hpp"

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
  // The built-in launcher labels lines itself; under MPI launchers each rank's shim does.
  ctx.label = request.label && !builtin;
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

}  // namespace

LauncherInventory find_launchers(const SystemProbe& probe) {
  LauncherInventory inv;
  auto find = [&](const std::string& name, std::optional<LauncherProgram>& slot) {
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
  const bool profile_applies = cluster.machine_forced || !machine.scheduler || *machine.scheduler == cluster.scheduler;
  if (machine.launcher != "auto") {
    if (profile_applies) {
      return mpi_choice(machine.launcher, machine, inventory);
    }
    note = "no " + std::string(to_string(*machine.scheduler)) + " job found on " + machine.name +
           ": running on this node only (start a job first to use " + machine.launcher + ")";
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
      if (found(inventory.mpirun)) {
        choice = mpi_choice("mpirun", machine, inventory);
      } else if (found(inventory.mpiexec)) {
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
  auto choice = choose_launcher(request, cluster, inventory);
  if (!choice) {
    return choice.error();
  }
  LaunchPlan plan;
  plan.scheduler = cluster.scheduler;
  plan.machine = cluster.machine.name;
  plan.launcher = choice->program;
  plan.style = choice->style;
  if (choice->warning) {
    plan.warnings.push_back(*choice->warning);
  }
  const bool builtin = plan.style == LauncherStyle::local;
  if (builtin && !request.launcher_args.empty()) {
    return usage_error("launcher flag " + request.launcher_args.front() +
                       " needs an MPI launcher, but this runs ezpz's built-in local launcher: drop it or pass "
                       "--launcher mpirun/mpiexec/srun");
  }

  // Topology. The built-in launcher starts processes on this host only.
  const int available = builtin ? 1 : static_cast<int>(cluster.hosts.size());
  auto topo = resolve_topology(request.topology, available, cluster.gpus.per_node);
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
                            std::to_string(cluster.gpus.per_node) + " GPUs per node (" + cluster.gpus.source +
                            "): ranks will share GPUs");
  }
  plan.hosts.assign(cluster.hosts.begin(), cluster.hosts.begin() + (builtin ? 1 : topo->nhosts));
  if (cluster.host_source.kind == HostSource::Kind::file && !builtin) {
    plan.hostfile = cluster.host_source.value;
  }

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

  const auto n = std::to_string(topo->nprocs);
  const auto ppn = std::to_string(topo->ppn);
  auto& argv = plan.argv;
  bool bind_used = plan.cpu_bind.empty();
  switch (plan.style) {
    case LauncherStyle::pals:
    case LauncherStyle::auto_detect:
      argv = {plan.launcher, "--envall", "--line-buffer", "--np=" + n, "--ppn=" + ppn};
      if (!plan.hostfile.empty()) {
        argv.push_back("--hostfile=" + plan.hostfile);
      }
      if (!plan.cpu_bind.empty()) {
        argv.push_back("--cpu-bind=" + plan.cpu_bind);
        if (plan.cpu_bind == "depth" && cluster.machine.depth > 0 &&
            !has_flag(request.launcher_args, {"--depth", "-d"})) {
          argv.push_back("--depth=" + std::to_string(cluster.machine.depth));
        }
        bind_used = true;
      }
      break;
    case LauncherStyle::sophia:
      argv = {plan.launcher, "-n=" + n, "-N=" + ppn};
      if (!plan.hostfile.empty()) {
        argv.push_back("--hostfile=" + plan.hostfile);
      }
      argv.insert(argv.end(), {"-x", "PATH", "-x", "LD_LIBRARY_PATH"});
      append_env_forwarding(argv, plan.env);
      break;
    case LauncherStyle::srun:
      argv = {plan.launcher, "-u", "--verbose", "-N" + std::to_string(topo->nhosts), "-n" + n};
      if (cluster.gpus.known) {
        argv.push_back("--gpus-per-node=" + ppn);
      }
      if (request.hostfile || topo->nhosts < static_cast<int>(cluster.hosts.size())) {
        argv.push_back("--nodelist=" + join(plan.hosts, ","));
      }
      if (!plan.cpu_bind.empty()) {
        argv.push_back("--cpu-bind=" + plan.cpu_bind);
        bind_used = true;
      }
      break;
    case LauncherStyle::openmpi:
      argv = {plan.launcher, "-np", n};
      if (env.uid == 0) {
        argv.emplace_back("--allow-run-as-root");
      }
      if (!plan.hostfile.empty()) {
        argv.insert(argv.end(), {"--hostfile", plan.hostfile, "--map-by", "ppr:" + ppn + ":node"});
      } else {
        argv.emplace_back("--oversubscribe");
      }
      append_env_forwarding(argv, plan.env);
      break;
    case LauncherStyle::mpich:
      argv = {plan.launcher, "-n", n, "-ppn", ppn};
      if (!plan.hostfile.empty()) {
        argv.insert(argv.end(), {"-f", plan.hostfile});
      }
      break;
    case LauncherStyle::local:
      break;
  }
  auto ctx = rank_context(request, cluster, *topo, builtin);
  if (!ctx) {
    return ctx.error();
  }
  plan.rank = *ctx;
  plan.rank_env = request.rank_env;
  plan.label = request.label;
  if (request.label && !builtin && !request.rank_env) {
    if (auto flag = label_flag(plan.style)) {
      argv.push_back(*flag);  // no shim to label the lines: the launcher's own format
    }
  }
  if (request.rank_env && topo->ppn > 1 && !env.has("OMP_NUM_THREADS")) {
    plan.notes.push_back("OMP_NUM_THREADS=1 for every rank (" + std::to_string(topo->ppn) +
                         " share a node), as torchrun sets it: export OMP_NUM_THREADS to tune it");
  }
  if (!bind_used) {
    plan.warnings.push_back("--cpu-bind=" + plan.cpu_bind + " is ignored by " + std::string(to_string(plan.style)) +
                            " " + plan.launcher + ": pass its own binding flag before --");
    plan.cpu_bind.clear();
  }
  argv.insert(argv.end(), request.launcher_args.begin(), request.launcher_args.end());
  if (request.rank_env && !builtin) {
    // Each rank runs this binary first: it turns the launcher's variables into
    // RANK, WORLD_SIZE, ... and execs the command (src/cli/rank_env.cpp).
    argv.push_back(env.self_exe.empty() ? "ezpz" : env.self_exe);
    argv.emplace_back("__rank-env");
    auto shim = rank_shim_args(plan.rank);
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
  out.argv = with_shim_args(plan.argv, out.rank);
  return out;
}

}  // namespace ezpz::core
