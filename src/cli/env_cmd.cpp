#include "cli/env_cmd.hpp"

#include <CLI/App.hpp>
#include <CLI/Validators.hpp>
#include <nlohmann/json.hpp>

#include "cli/launch.hpp"
#include "cli/terminal.hpp"
#include "core/base/log.hpp"
#include "core/base/shell.hpp"
#include "core/job/job_env.hpp"

namespace ezpz::cli {

void EnvCommand::add_cli(CLI::App& app) {
  app.add_option("--shell", shell_, "Syntax of the lines: bash, zsh or fish (default: $SHELL's, else bash)")
      ->check(CLI::IsMember({"bash", "zsh", "fish"}));
  app.add_flag("--json", json_, "Print the variables as one JSON object instead");
  app.add_option("--hostfile", hostfile_, "The job's hosts (default: found as for launch)")->type_name("FILE");
  app.add_option("--machine", machine_, "Machine profile to use (default: detected)")->type_name("MACHINE");
  app.footer(
      "Examples:\n"
      "  eval \"$(ezpz env)\"                 # bash, in a PBS or Slurm job\n"
      "  eval \"$(ezpz env --shell zsh)\"     # zsh: EZPZ_LAUNCH and DIST_LAUNCH are arrays\n"
      "  ezpz env --shell fish | source      # fish: lists\n"
      "  $EZPZ_LAUNCH python3 -m app.train   # the same as: ezpz launch -- python3 -m app.train");
}

int EnvCommand::run(Context& ctx) {
  core::ShellKind shell = core::ShellKind::bash;
  if (!shell_.empty()) {
    shell = *core::shell_from_string(shell_);
  } else if (auto sh = ctx.env.get("SHELL")) {
    shell = core::shell_from_string(sh->substr(sh->rfind('/') + 1)).value_or(core::ShellKind::bash);
  }
  core::LaunchRequest request;
  if (!hostfile_.empty()) {
    request.hostfile = hostfile_;
  }
  if (!machine_.empty()) {
    request.machine = machine_;
  }
  request.rank_env = false;            // the launcher line alone: no shim, no port held
  request.command = {"__EZPZ_CMD__"};  // a placeholder, cut off below
  auto job = plan_job(ctx, request);
  if (!job) {
    return ctx.term.fail(job.error());
  }
  const auto& plan = job->plan;
  const auto& cluster = job->cluster;
  std::vector<std::string> launcher(plan.argv.begin(), plan.argv.end() - 1);
  log::info("env: DIST_LAUNCH " +
            (launcher.empty() ? std::string("(the built-in launcher: ezpz launch)") : core::shell_join(launcher)));
  const std::string self = ctx.env.self_exe.empty() ? "ezpz" : ctx.env.self_exe;
  const int nhosts = static_cast<int>(cluster.hosts.size());
  std::vector<std::pair<std::string, std::string>> vars;
  if (cluster.host_source.kind == core::HostSource::Kind::file) {
    vars.emplace_back("HOSTFILE", cluster.host_source.value);
  } else if (!plan.hostfile.empty()) {
    vars.emplace_back("HOSTFILE", plan.hostfile);
  }
  vars.emplace_back("NHOSTS", std::to_string(nhosts));
  vars.emplace_back("NGPU_PER_HOST", std::to_string(cluster.gpus.per_node));
  vars.emplace_back("NGPUS", std::to_string(nhosts * cluster.gpus.per_node));
  vars.emplace_back("MACHINE", cluster.machine.name);
  // Commands, each as its shell runs `$NAME args...`. ezpz's DIST_LAUNCH: the launcher line
  // itself (the built-in launcher has none: ezpz launch).
  const std::vector<std::string> ezpz_launch = {self, "launch", "--"};
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands = {
      {"EZPZ_LAUNCH", ezpz_launch}, {"DIST_LAUNCH", launcher.empty() ? ezpz_launch : launcher}};
  if (json_) {
    for (const auto& [k, words] : commands) {
      vars.emplace_back(k, core::shell_join(words));
    }
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (const auto& [k, v] : vars) {  // counts are numbers
      if (k == "NHOSTS" || k == "NGPU_PER_HOST" || k == "NGPUS") {
        j[k] = std::stoll(v);
      } else {
        j[k] = v;
      }
    }
    ctx.term.print_json(j.dump());
    return 0;
  }
  ctx.term.out() << core::export_lines(vars, shell);
  for (const auto& [k, words] : commands) {
    ctx.term.out() << core::command_line_var(k, words, shell);
  }
  return 0;
}

}  // namespace ezpz::cli
