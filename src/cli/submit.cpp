#include "cli/submit.hpp"

#include <chrono>

#include <CLI/App.hpp>
#include <CLI/Validators.hpp>

#include "cli/terminal.hpp"
#include "core/cluster.hpp"
#include "core/job_env.hpp"
#include "core/shell.hpp"

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
  app.add_option("-N,--nodes", nodes_, "Nodes to ask for (default 1)")->type_name("N");
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
  app.add_option("-o,--output", output_, "Script path (default ezpz-submit-<time>-<pid>.sh here)")->type_name("FILE");
  app.add_flag("--submit", submit_, "Submit it with qsub or sbatch after writing it");
  app.add_flag("--dry-run", dry_run_, "Print the script on stdout; write and submit nothing");
  app.footer(
      "The script activates the virtual env or conda env active when you run ezpz submit, then runs\n"
      "ezpz launch -- COMMAND; with --submit, the scheduler's job id is printed.\n\n"
      "Examples:\n"
      "  ezpz submit -N 2 -t 01:00:00 -q debug -A MyProj --dry-run -- python3 -m app.train\n"
      "  ezpz submit -N 8 -t 2:00:00 -q prod -A MyProj --env WANDB_MODE=offline --submit -- python3 train.py");
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
  spec.ezpz = ctx.env.self_exe;
  spec.launch_args = launch_args_;
  spec.command = command_;
  spec.activate = core::active_env(ctx.env);
  auto script = core::render_submit_script(spec);
  if (!script) {
    return ctx.term.fail(script.error());
  }
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

}  // namespace ezpz::cli
