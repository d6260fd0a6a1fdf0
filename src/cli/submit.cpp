#include "cli/submit.hpp"

#include <algorithm>
#include <chrono>

#include <CLI/App.hpp>
#include <CLI/Validators.hpp>

#include "cli/terminal.hpp"
#include "core/base/log.hpp"
#include "core/base/shell.hpp"
#include "core/base/strings.hpp"
#include "core/doctor/script_traps.hpp"
#include "core/job/cluster.hpp"
#include "core/job/job_env.hpp"
#include "core/launch/failover.hpp"
#include "core/yeet/plan.hpp"

namespace ezpz::cli {
namespace {

/// ezpz-submit-<time>-<pid>.sh here, -2, -3... after it when taken: two submits in one second
/// never overwrite each other's script.
std::string script_name(Context& ctx) {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&now));
  const std::string base = "ezpz-submit-" + std::string(stamp) + "-" + std::to_string(ctx.env.pid);
  std::string path = base + ".sh";
  for (int k = 2; ctx.probe().is_file(path); ++k) {
    path = base + "-" + std::to_string(k) + ".sh";
  }
  return path;
}

}  // namespace

void SubmitCommand::add_cli(CLI::App& app) {
  app_ = &app;
  app.add_option("-N,--nodes", nodes_, "Nodes to ask for (default 1)")->type_name("N");
  app.add_option("--spare-nodes", spare_nodes_,
                 "Ask for N nodes more, kept as spares by the launch (ezpz launch --spare-nodes N); Slurm: "
                 "#SBATCH --no-kill, without which a node's failure ends the job")
      ->type_name("N")
      ->check(CLI::NonNegativeNumber);
  app.add_option("-t,--time", walltime_, "Walltime: HH:MM:SS, MM:SS or minutes (Slurm also D-HH:MM:SS)")
      ->type_name("TIME");
  app.add_option("-q,--queue", queue_, "PBS queue or Slurm partition (default: the site's)")->type_name("QUEUE");
  app.add_option("-A,--account", account_, "Project/account to charge")->type_name("ACCOUNT");
  app.add_option("--filesystems", filesystems_, "PBS -l filesystems= (ALCF; default home; empty for none)")
      ->type_name("LIST");
  app.add_option("--job-name", job_name_, "Job name (default ezpz)")->type_name("NAME");
  app.add_option("--scheduler", scheduler_, "pbs or slurm (default: the one whose qsub/sbatch is on PATH)")
      ->check(CLI::IsMember({"pbs", "slurm", "PBS", "SLURM"}));
  app.add_option("--env", env_, "NAME=VALUE exported in the script (repeatable)")->type_name("NAME=VALUE");
  app.add_option("--launch-arg", launch_args_, "An option for the script's `ezpz launch` (repeatable), e.g. --ppn=4")
      ->type_name("ARG");
  app.add_option("--exclude-from", exclude_from_,
                 "Keep the job off the nodes in FILE (a host a line; ezpz launch's bad-nodes file): Slurm --exclude")
      ->type_name("FILE");
  app.add_option("--sched-arg", sched_args_,
                 "A scheduler directive for the script (repeatable), e.g. --sched-arg '-C gpu' (#SBATCH -C gpu)")
      ->type_name("ARG");
  app.add_option("--yeet", yeet_,
                 "Copy SRC (default: the active env) to node-local /tmp on every node first (ezpz yeet "
                 "--compress) and run from that copy")
      ->expected(0, 1)
      ->type_name("[SRC]");
  app.add_option("--machine", machine_, "Write the script for this machine's profile instead of the detected one")
      ->type_name("MACHINE");
  app.add_flag("--force", force_, "Write the script even when the command's program or script is not found");
  app.add_option("-o,--output", output_, "Script path (default ezpz-submit-<time>-<pid>.sh here)")->type_name("FILE");
  app.add_flag("--submit", submit_, "Submit it with qsub or sbatch after writing it");
  app.add_flag("--dry-run", dry_run_, "Print the script on stdout; write and submit nothing");
  app.footer(
      "The script activates the virtual env or conda env active when you run ezpz submit, then runs\n"
      "ezpz launch -- COMMAND; with --submit, the scheduler's job id is printed.\n\n"
      "Examples:\n"
      "  ezpz submit -N 2 -t 01:00:00 -q debug -A MyProj --dry-run -- python3 -m app.train\n"
      "  ezpz submit -N 8 -t 2:00:00 -q prod -A MyProj --env WANDB_MODE=offline --submit -- python3 train.py\n"
      "  ezpz submit -N 64 -t 2:00:00 -A MyProj --yeet --submit -- python3 -m app.train   # the env copied first");
}

void SubmitCommand::set_trailing_command(std::vector<std::string> command, bool /*had_separator*/) {
  command_ = std::move(command);
}

int SubmitCommand::run(Context& ctx) {
  core::SubmitSpec spec;
  if (!scheduler_.empty()) {
    spec.scheduler = scheduler_ == "slurm" || scheduler_ == "SLURM" ? core::Scheduler::slurm : core::Scheduler::pbs;
  } else if (ctx.probe().find_program("qsub")) {
    spec.scheduler = core::Scheduler::pbs;
  } else if (ctx.probe().find_program("sbatch")) {
    spec.scheduler = core::Scheduler::slurm;
  } else {
    return ctx.term.fail(usage_error("neither qsub nor sbatch is on PATH: pass --scheduler pbs or --scheduler slurm"));
  }
  spec.nodes = nodes_;
  spec.spare_nodes = spare_nodes_;
  if (spare_nodes_ > 0 && spec.scheduler == core::Scheduler::pbs) {
    ctx.term.warn(
        "PBS may end a job when one of its nodes fails: where the site allows it (not on Cray PALS's "
        "moms), add --sched-arg '-W tolerate_node_failures=all'");
  }
  spec.walltime = walltime_;
  spec.queue = queue_;
  spec.account = account_;
  spec.filesystems = spec.scheduler == core::Scheduler::pbs ? filesystems_ : "";
  spec.job_name = job_name_;
  for (const auto& e : env_) {
    auto kv = core::parse_env_assignment(e);
    if (!kv) {
      return ctx.term.fail(kv.error());
    }
    spec.env.push_back(*kv);
  }
  spec.workdir = ctx.env.get("PWD").value_or("");
  // What the job will run, found from where it runs: a typo fails now, not after the queue.
  if (auto ok = check_command(ctx, spec.workdir); !ok) {
    return ctx.term.fail(ok.error());
  }
  if (auto ok = add_sched_args(ctx, spec); !ok) {
    return ctx.term.fail(ok.error());
  }
  if (auto ok = plan_yeet_step(ctx, spec); !ok) {
    return ctx.term.fail(ok.error());
  }
  spec.machine = machine_;
  spec.ezpz = ctx.env.self_exe;
  spec.launch_args = launch_args_;
  spec.command = command_;
  spec.activate = core::active_env(ctx.env);
  auto script = core::render_submit_script(spec);
  if (!script) {
    return ctx.term.fail(script.error());
  }
  log::info("submit: a " + std::string(core::to_string(spec.scheduler)) + " script of " +
            std::to_string(std::count(script->begin(), script->end(), '\n')) + " lines" +
            (spec.yeet_src.empty() ? "" : "; it copies " + spec.yeet_src + " to " + spec.yeet_dst + " first") +
            (spec.activate.kind == core::ActiveEnv::Kind::none ? "" : "; it activates " + spec.activate.prefix));
  if (spec.activate.kind == core::ActiveEnv::Kind::none) {
    ctx.term.warn(
        "no virtual env or conda env is active: the job runs with the python its shell finds there "
        "(activate yours, then run ezpz submit again, to carry it into the script)");
  }
  if (dry_run_) {
    ctx.term.out() << *script;
    return 0;
  }
  const std::string path = output_.empty() ? script_name(ctx) : output_;
  if (auto w = ctx.probe().write_file(path, *script); !w) {
    return ctx.term.fail(w.error());
  }
  ctx.term.out() << "wrote " << path
                 << (spec.activate.kind == core::ActiveEnv::Kind::none ? ""
                                                                       : " (it activates " + spec.activate.prefix + ")")
                 << "\n";
  if (!submit_) {
    ctx.term.out() << "submit it with: " << (spec.scheduler == core::Scheduler::pbs ? "qsub " : "sbatch ")
                   << core::shell_quote(path) << "\n";
    return 0;
  }
  const std::string tool = spec.scheduler == core::Scheduler::pbs ? "qsub" : "sbatch";
  if (!ctx.probe().find_program(tool)) {
    return ctx.term.fail(failure(tool + " is not on PATH: submit " + path + " from a login node, or drop --submit"));
  }
  log::info("submit: " + tool + " " + path);
  auto ran = ctx.probe().run_program({tool, path}, {}, {}, 120);
  if (!ran) {
    return ctx.term.fail(ran.error());
  }
  if (ran->exit_code != 0 || ran->timed_out) {
    ctx.term.err() << ran->output;
    ctx.term.error(tool + " " + path +
                   (ran->timed_out ? " took over 120 s" : " failed (exit " + std::to_string(ran->exit_code) + ")") +
                   ": the script is kept; submit it by hand once the scheduler answers");
    return ran->timed_out ? static_cast<int>(ExitCode::timeout) : ran->exit_code;
  }
  if (const auto id = core::submitted_job_id(ran->output, spec.scheduler)) {
    ctx.term.out() << "submitted job " << *id << " (" << tool << " " << path << "); watch it with "
                   << (spec.scheduler == core::Scheduler::pbs ? "qstat " : "squeue -j ") << *id << "\n";
  } else {
    ctx.term.out() << ran->output << "submitted " << path << " with " << tool << "\n";
  }
  return 0;
}

Expected<void> SubmitCommand::add_sched_args(Context& ctx, core::SubmitSpec& spec) const {
  EZPZ_TRY_ASSIGN(auto machines, core::load_machines(ctx.env, ctx.probe()));
  const auto named = machine_.empty() ? ctx.env.get("EZPZ_MACHINE") : std::optional<std::string>(machine_);
  const auto* found = named ? machines.find(*named) : nullptr;
  if (!machine_.empty() && found == nullptr) {
    std::vector<std::string> names;
    for (const auto& m : machines.profiles()) {
      names.push_back(m.name);
    }
    return usage_error("--machine " + machine_ + " is not a known machine" + core::did_you_mean_note(machine_, names) +
                       "; known: " + core::join(names, ", "));
  }
  const auto& profile = found != nullptr ? *found : *machines.identify(ctx.env).profile;
  log::info(
      "submit: machine " + profile.name + (found != nullptr ? " (named)" : " (this host's)") +
      ", its directives: " + (profile.sched_args.empty() ? std::string("none") : core::join(profile.sched_args, " ")));
  if (!profile.scheduler || *profile.scheduler == spec.scheduler) {
    spec.sched_args = profile.sched_args;
  }
  // Filesystems once: yours (--filesystems), else the machine's, else the default.
  auto filesystems = [](const std::string& a) { return core::starts_with(a, "-l filesystems="); };
  if (app_->count("--filesystems") > 0) {
    std::erase_if(spec.sched_args, filesystems);
  } else if (std::any_of(spec.sched_args.begin(), spec.sched_args.end(), filesystems)) {
    spec.filesystems.clear();
  }
  spec.sched_args.insert(spec.sched_args.end(), sched_args_.begin(), sched_args_.end());
  if (!exclude_from_.empty()) {  // the nodes a failover evicted (the record's bad-nodes file)
    auto text = ctx.probe().read_file(exclude_from_);
    if (!text) {
      return usage_error("--exclude-from " + exclude_from_ + " cannot be read: " + text.error().message);
    }
    EZPZ_TRY_ASSIGN(auto arg, core::exclusion_arg(spec.scheduler == core::Scheduler::slurm, *text, exclude_from_));
    spec.sched_args.push_back(arg);
  }
  return {};
}

Expected<void> SubmitCommand::plan_yeet_step(Context& ctx, core::SubmitSpec& spec) const {
  if (app_->count("--yeet") == 0) {
    return {};
  }
  std::string src = yeet_;
  if (src.empty()) {
    const auto active = core::active_env(ctx.env);
    if (active.kind == core::ActiveEnv::Kind::none) {
      return usage_error("--yeet copies the active env, and none is active: activate it, or pass --yeet PATH");
    }
    src = active.prefix;
  } else if (src.front() != '/') {
    src = spec.workdir + "/" + src;
  }
  const auto stamp = ctx.probe().file_stamp(src);
  const bool dir = stamp && stamp->directory;
  const auto name = core::source_name(src, dir);
  if (!stamp) {
    return usage_error("--yeet " + src + " does not exist: pass an env directory or a .tar.gz/.tar.zst tarball");
  }
  if (!name || name->empty()) {
    return usage_error("--yeet " + src + " is neither a directory nor a .tar.gz/.tgz/.tar.zst/.tar.xz/.tar archive");
  }
  // Where `ezpz yeet` would put it (config's [yeet] destination or the per-user, per-source default).
  EZPZ_TRY_ASSIGN(auto settings, core::yeet_settings(ctx.env, ctx.probe()));
  const auto real = ctx.probe().real_path(src);
  EZPZ_TRY_ASSIGN(auto dst, core::default_destination(
                                settings.destination.empty() ? core::kDefaultDestination : settings.destination, *name,
                                core::path_user(ctx.env), real.empty() ? src : real));
  if (real == ctx.probe().real_path(dst)) {
    ctx.term.warn("--yeet: " + src + " is already at " + dst + ": the script copies nothing and runs it there");
    return {};
  }
  spec.yeet_src = src;
  spec.yeet_dst = dst;
  return {};
}

Expected<void> SubmitCommand::check_command(Context& ctx, const std::string& workdir) const {
  for (const auto& f : core::command_files(command_)) {
    const bool found = f.on_path ? ctx.probe().find_program(f.path).has_value()
                                 : ctx.probe().is_file(f.path.front() == '/' ? f.path : workdir + "/" + f.path);
    if (found && !f.on_path) {  // a shell script the job runs: its traps now, not after the queue
      const auto path = f.path.front() == '/' ? f.path : workdir + "/" + f.path;
      if (auto text = ctx.probe().read_file(path); text && core::is_shell_script(*text)) {
        for (const auto& t : core::script_traps(*text)) {
          ctx.term.warn(f.path + ": " + t.problem + "; " + t.remedy);
        }
      }
    }
    if (found) {
      continue;
    }
    const std::string why = f.on_path
                                ? f.path + " is not on PATH: the job's command would not start"
                                : f.path + " does not exist in " + (workdir.empty() ? std::string(".") : workdir) +
                                      ", where the job runs " + core::shell_join(command_);
    if (!force_) {
      return usage_error(why + ": fix the command, or pass --force to write the script anyway");
    }
    ctx.term.warn(why + ": written anyway (--force)");
  }
  return {};
}

}  // namespace ezpz::cli
