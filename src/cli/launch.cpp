#include "cli/launch.hpp"

#include <CLI/App.hpp>
#include <CLI/Validators.hpp>
#include <nlohmann/json.hpp>

#include "cli/terminal.hpp"
#include "core/log.hpp"
#include "core/shell.hpp"

namespace ezpz::cli {
namespace {

int fail(Context& ctx, const Error& e) {
  ctx.term.error(e.message);
  return static_cast<int>(e.code);
}

nlohmann::json plan_json(const core::LaunchPlan& plan, const core::ClusterInfo& cluster) {
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [name, value] : plan.env) {
    env[name] = value;
  }
  auto optional_string = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  return {
      {"scheduler", core::to_string(plan.scheduler)},
      {"machine", plan.machine},
      {"hosts", plan.hosts},
      {"nhosts", plan.topology.nhosts},
      {"ppn", plan.topology.ppn},
      {"nprocs", plan.topology.nprocs},
      {"gpus_per_node", cluster.gpus.per_node},
      {"host_source", cluster.host_source.origin},
      {"hostfile", optional_string(plan.hostfile)},
      {"launcher", plan.launcher},
      {"style", core::to_string(plan.style)},
      {"cpu_bind", optional_string(plan.cpu_bind)},
      {"argv", plan.argv},
      {"env", env},
      {"warnings", plan.warnings},
  };
}

}  // namespace

void LaunchCommand::add_cli(CLI::App& app) {
  app_ = &app;
  app.add_option("-n,--np,--nproc,--nprocs,--world_size,--world-size", nprocs_,
                 "Total number of processes (aliases -np, --n)")
      ->type_name("N");
  app.add_option("--ppn,--nproc_per_node,--nproc-per-node", ppn_, "Processes per host (alias -ppn)")->type_name("N");
  app.add_option("--nhosts,--nh,--nhost,--nnode,--nnodes", nhosts_, "Number of hosts to use (alias -nh)")
      ->type_name("N");
  app.add_option("--hostfile", hostfile_, "File with one host per line (default: the job's own)")->type_name("FILE");
  app.add_option("--machine", machine_, "Use this machine's profile instead of detecting it (also EZPZ_MACHINE)")
      ->type_name("MACHINE");
  app.add_option("--launcher", launcher_, "Launcher to use instead of the machine's")
      ->check(CLI::IsMember({"mpiexec", "mpirun", "srun", "local"}));
  app.add_option("--cpu-bind", cpu_bind_, "CPU binding for mpiexec/srun (beats CPU_BIND and the machine default)")
      ->type_name("BIND");
  auto* dry = app.add_flag("--dry-run", dry_run_, "Print the launch command instead of running it");
  app.add_flag("--json", json_, "With --dry-run: print the plan as one JSON object")->needs(dry);
  app.add_option("command", positional_, "The command to run; put it after -- (recommended)")->type_name("CMD...");
  app.positionals_at_end(true);
  app.allow_extras(true);
  app.footer(
      "Flags before -- that launch does not know are passed to the launcher verbatim;\n"
      "everything after -- is the command and is never reinterpreted.\n\n"
      "Examples:\n"
      "  ezpz launch -- python3 -m app.train          # every GPU of the job\n"
      "  ezpz launch -n 8 --ppn 4 -- python3 train.py  # 8 processes on 2 hosts\n"
      "  ezpz launch -x FOO=1 -- python3 train.py      # -x FOO=1 goes to the launcher\n"
      "  ezpz launch --dry-run --json -- python3 train.py");
}

void LaunchCommand::normalize(std::vector<std::string>& tokens) const {
  static const std::vector<std::pair<std::string, std::string>> aliases = {
      {"-np", "--np"}, {"--n", "--np"}, {"-ppn", "--ppn"}, {"-nh", "--nh"}, {"-nhosts", "--nhosts"}};
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    auto& t = tokens[i];
    std::string name = t.substr(0, t.find('='));
    for (const auto& [from, to] : aliases) {
      if (name == from) {
        t = to + t.substr(name.size());
        name = to;
      }
    }
    if (t.empty() || t[0] != '-') {
      return;  // the command starts here: its flags are the user's
    }
    const auto* opt = app_->get_option_no_throw(name);
    if (opt != nullptr && opt->get_items_expected_max() > 0 && t.find('=') == std::string::npos) {
      ++i;  // skip the option's value
    }
  }
}

void LaunchCommand::set_trailing_command(std::vector<std::string> command, bool had_separator) {
  request_ = {};
  request_error_.clear();
  auto extras = app_->remaining();
  if (had_separator) {
    request_.launcher_args = extras;
    request_.launcher_args.insert(request_.launcher_args.end(), positional_.begin(), positional_.end());
    request_.command = std::move(command);
  } else {
    request_.command = positional_;
    if (!extras.empty()) {
      request_error_ = "unknown option " + extras.front() +
                       " before the command: put launcher flags before -- and the command after it, e.g. "
                       "ezpz launch " +
                       extras.front() + " ... -- python3 train.py";
    }
  }
  auto set_if = [](CLI::App* app, const char* name, auto& field, const auto& value) {
    if (app->count(name) > 0) {
      field = value;
    }
  };
  set_if(app_, "--np", request_.topology.nprocs, nprocs_);
  set_if(app_, "--ppn", request_.topology.ppn, ppn_);
  set_if(app_, "--nhosts", request_.topology.nhosts, nhosts_);
  set_if(app_, "--hostfile", request_.hostfile, hostfile_);
  set_if(app_, "--machine", request_.machine, machine_);
  set_if(app_, "--launcher", request_.launcher, launcher_);
  set_if(app_, "--cpu-bind", request_.cpu_bind, cpu_bind_);
}

int LaunchCommand::run(Context& ctx) {
  if (!request_error_.empty()) {
    return fail(ctx, usage_error(request_error_));
  }
  // 1. Machine profiles: built-in, then the user's config.
  auto machines = core::load_machines(ctx.env, ctx.probe);
  if (!machines) {
    return fail(ctx, machines.error());
  }
  // 2. Scheduler, machine, hosts and GPUs of this job.
  auto cluster = core::discover_cluster(ctx.env, *machines, request_.machine, request_.hostfile, ctx.probe);
  if (!cluster) {
    return fail(ctx, cluster.error());
  }
  log::debug("scheduler " + std::string(core::to_string(cluster->scheduler)) + ", machine " + cluster->machine.name +
             ", " + std::to_string(cluster->hosts.size()) + " host(s) from " + cluster->host_source.origin + ", " +
             std::to_string(cluster->gpus.per_node) + " GPU(s) per node from " + cluster->gpus.source);
  // 3. The launcher programs this machine has, then the plan.
  auto plan = core::plan_launch(request_, ctx.env, *cluster, core::find_launchers(ctx.probe));
  if (!plan) {
    return fail(ctx, plan.error());
  }
  for (const auto& w : plan->warnings) {
    ctx.term.warn(w);
  }
  // 4. Show it, or run it.
  if (dry_run_) {
    if (json_) {
      ctx.term.out() << plan_json(*plan, *cluster).dump() << '\n';
    } else if (plan->style == core::LauncherStyle::local) {
      // The built-in launcher runs in-process: show the equivalent ezpz command.
      std::vector<std::string> line = {
          "ezpz", "launch", "--launcher", "local", "--np=" + std::to_string(plan->topology.nprocs), "--"};
      line.insert(line.end(), plan->argv.begin(), plan->argv.end());
      ctx.term.out() << core::shell_command_line(plan->env, line) << '\n';
    } else {
      ctx.term.out() << core::shell_command_line(plan->env, plan->argv) << '\n';
    }
    return 0;
  }
  if (plan->style == core::LauncherStyle::local) {
    return fail(ctx, usage_error("no MPI launcher found (mpirun, mpiexec or srun) and ezpz's built-in local launcher "
                                 "cannot run jobs yet: install MPI or use --dry-run to see the plan"));
  }
  log::info("exec: " + core::shell_command_line(plan->env, plan->argv));
  return fail(ctx, ctx.process.exec_replace(plan->argv, plan->env));
}

}  // namespace ezpz::cli
