#include "cli/doctor.hpp"

#include <chrono>
#include <functional>
#include <future>
#include <utility>

#include <CLI/App.hpp>
#include <CLI/Validators.hpp>

#include "cli/launch.hpp"
#include "cli/reach_options.hpp"
#include "cli/terminal.hpp"
#include "cli/version.hpp"
#include "core/base/log.hpp"
#include "core/base/strings.hpp"
#include "core/doctor/doctor.hpp"
#include "core/doctor/script_traps.hpp"
#include "core/job/cluster.hpp"
#include "core/reach/agents.hpp"
#include "core/reach/spec.hpp"
#include "core/reach/transport.hpp"

namespace ezpz::cli {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// Run `check` on its own thread, timing it.
std::future<core::CheckResult> start_check(std::function<core::CheckResult()> check) {
  return std::async(std::launch::async, [check = std::move(check)] {
    const auto start = Clock::now();
    auto r = check();
    r.duration_ms = ms_since(start);
    return r;
  });
}

/// -v: a check's verdict and its time, as it comes in (the report sorts and groups them after).
void log_result(const core::CheckResult& r) {
  log::info("doctor: " + (r.host.empty() ? std::string() : r.host + ": ") + r.name + ": " +
            std::string(core::to_string(r.status)) + " in " + std::to_string(static_cast<long>(r.duration_ms)) +
            " ms: " + r.message);
}

/// One rank per host through the real launcher, each printing its rank variables.
core::CheckResult launch_probe(Context& ctx, const core::LocalFacts& facts, const std::string& hostfile,
                               const std::string& machine, const std::string& launcher, int timeout_s) {
  const auto start = Clock::now();
  core::LaunchProbeOutcome outcome;
  core::LaunchRequest request;
  if (!hostfile.empty()) {
    request.hostfile = hostfile;
  }
  if (!machine.empty()) {
    request.machine = machine;
  }
  if (!launcher.empty()) {
    request.launcher = launcher;
  }
  const int hosts = facts.cluster ? static_cast<int>(facts.cluster->hosts.size()) : 1;
  request.topology.nprocs = hosts;
  request.topology.ppn = 1;
  request.command = {ctx.env.self_exe.empty() ? "ezpz" : ctx.env.self_exe, "__doctor-node", "--rank-env"};
  auto job = plan_job(ctx, request);
  if (!job) {
    outcome.start_error = job.error().message;
  } else {
    const auto& plan = job->plan;
    outcome.hosts = plan.hosts;
    outcome.hosts.resize(std::min<std::size_t>(outcome.hosts.size(), static_cast<std::size_t>(hosts)));
    outcome.launcher = plan.launcher == "local" ? "the built-in launcher"
                                                : plan.launcher + " (" + std::string(core::to_string(plan.style)) + ")";
    if (plan.style == core::LauncherStyle::local) {
      std::vector<std::future<Expected<core::ProgramOutput>>> ranks;
      for (int r = 0; r < plan.topology.nprocs; ++r) {
        ranks.push_back(std::async(std::launch::async, [&, r] {
          return ctx.probe().run_program(plan.argv, core::local_rank_environment(plan, ctx.env, r), {}, timeout_s);
        }));
      }
      outcome.output.exit_code = 0;
      for (auto& f : ranks) {
        auto out = f.get();
        if (!out) {
          outcome.start_error = out.error().message;
          continue;
        }
        outcome.output.output += out->output;
        outcome.output.timed_out = outcome.output.timed_out || out->timed_out;
        if (outcome.output.exit_code == 0) {
          outcome.output.exit_code = out->exit_code;
        }
      }
    } else {
      auto out = ctx.probe().run_program(plan.argv, plan.env, plan.unset_env, timeout_s);
      if (out) {
        outcome.output = *out;
      } else {
        outcome.start_error = out.error().message;
      }
    }
  }
  outcome.seconds = ms_since(start) / 1000;
  auto r = core::launch_check(outcome);
  r.duration_ms = ms_since(start);
  return r;
}

/// --nodes' results from the nodes' replies: a line per host and the summaries, each timed.
std::vector<core::CheckResult> node_tier_results(const std::vector<core::NodeReply>& replies,
                                                 const core::ReachPlan& reach, const std::string& exe,
                                                 const std::string& dst, int timeout_s, unsigned long long need,
                                                 double took_ms) {
  core::NodeTierOptions options;
  options.version = std::string(version_number());
  options.exe = exe;
  options.dst = dst;
  options.need_bytes = need;
  options.transport = core::reach_transport_text(reach);
  options.timeout_s = timeout_s;
  auto results = core::node_checks(replies, options);
  for (auto& r : results) {
    r.duration_ms = r.host.empty() ? took_ms : 0;
    for (const auto& reply : replies) {
      if (r.host == reply.host && reply.reply_ns > 0) {
        r.duration_ms = static_cast<double>(reply.reply_ns - reply.start_ns) / 1e6;
      }
    }
  }
  return results;
}

/// --script FILE's findings: one warning per trap, or one ok.
std::vector<core::CheckResult> script_results(const std::string& path, const std::string& text) {
  std::vector<core::CheckResult> out;
  for (const auto& t : core::script_traps(text)) {
    out.push_back(core::check_warning("script", path + ": " + t.problem, t.remedy));
  }
  if (out.empty()) {
    out.push_back(core::check_ok(
        "script",
        path + ": no set -u before its modules, no Lmod init in a non-login shell, no fetch from the network"));
  }
  return out;
}

}  // namespace

void DoctorCommand::add_cli(CLI::App& app) {
  app_ = &app;
  app.add_flag(
      "--json", json_,
      "Print one JSON object: {summary: {ok, warnings, failed}, checks: [{name, status, message, remedy, host?, "
      "duration_ms}]}");
  app.add_flag("--nodes", nodes_,
               "Also reach every host of the job over ssh: round trip, clock skew, free space, same ezpz");
  app.add_flag("--launch", launch_, "Also run one rank per host through the real launcher and check its variables");
  app.add_flag("--all", all_, "List every node's line, not only those with a problem (text output)");
  app.add_option("--hostfile", reach_.hostfile, "Hosts of the job (default: the job's own, as for launch)")
      ->type_name("FILE");
  app.add_option("--machine", machine_, "Check against this machine's profile instead of detecting it")
      ->type_name("MACHINE");
  app.add_option("--launcher", launcher_, "With --launch: the launcher to use instead of the machine's")
      ->check(CLI::IsMember({"mpiexec", "mpirun", "srun", "local"}));
  app.add_option("--dst", dst_, "With --nodes: the yeet destination whose free space counts (default /tmp)")
      ->type_name("PATH");
  app.add_option("--script", script_,
                 "Also check a batch script for traps: set -u before its modules, Lmod's init in a non-login "
                 "shell, a fetch from the network")
      ->type_name("FILE");
  add_reach_options(app, reach_, "With --nodes: ");
  app.add_option("--timeout", timeout_s_, "Seconds a node or the launch probe may take (default 10)")
      ->type_name("SECONDS")
      ->check(CLI::Range(1, 3600));
  app.footer(
      "Checks run concurrently; each prints [ OK ], [WARN] or [FAIL] with a remedy. Exit code 1 when any\n"
      "check fails (an error), else 0.\n\n"
      "Examples:\n"
      "  ezpz doctor                     # this host: scheduler, launcher, env, space, limits, W&B, GPUs\n"
      "  ezpz doctor --nodes             # ... and every node of the job over ssh\n"
      "  ezpz doctor --nodes --launch --json\n"
      "  ezpz doctor --script job.sh       # ... and a batch script's traps");
}

int DoctorCommand::run(Context& ctx) {
  auto opt = [](const std::string& s) { return s.empty() ? std::nullopt : std::optional<std::string>(s); };
  std::string script_text;
  if (!script_.empty()) {  // read first: a wrong path stops doctor before any check runs
    auto text = ctx.probe().read_file(script_);
    if (!text) {
      return ctx.term.fail(usage_error("--script: " + text.error().message));
    }
    script_text = std::move(*text);
  }
  const auto facts_start = Clock::now();
  const auto facts = core::gather_local_facts(ctx.env, ctx.probe(), opt(reach_.hostfile), opt(machine_),
                                              std::string(version_number()));
  const double facts_ms = ms_since(facts_start);
  log::info("doctor: this host's facts in " + std::to_string(static_cast<long>(facts_ms)) + " ms: " +
            (facts.cluster
                 ? std::string(core::to_string(facts.cluster->scheduler)) + ", machine " + facts.cluster->machine.name +
                       ", " + core::count_of(facts.cluster->hosts.size(), "host")
                 : facts.cluster_error));
  if (!facts.cluster) {  // a hostfile of lines that are not host names stops doctor as it stops launch
    if (auto bad = core::malformed_hostfile(ctx.env, opt(reach_.hostfile), ctx.probe())) {
      return ctx.term.fail(*bad);
    }
  }
  const auto& env = ctx.env;
  const auto& probe = ctx.probe();

  std::vector<std::future<core::CheckResult>> local;
  std::future<core::CheckResult> launch;
  std::future<std::optional<unsigned long long>> env_bytes;
  // Local checks start once every ssh connection has been forked (no fork after threads exist).
  auto start_local = [&] {
    for (const auto& check : core::local_checks()) {
      local.push_back(start_check([&, run = check.run] { return run(env, probe, facts); }));
    }
    if (launch_) {
      launch = std::async(std::launch::async,
                          [&] { return launch_probe(ctx, facts, reach_.hostfile, machine_, launcher_, timeout_s_); });
    }
    if (nodes_) {
      env_bytes = std::async(std::launch::async, [&]() -> std::optional<unsigned long long> {
        auto active = core::active_env(env);
        return active ? probe.tree_bytes(probe.real_path(*active)) : std::nullopt;
      });
    }
  };

  std::vector<core::CheckResult> node_results;
  const auto reach = facts.cluster ? core::plan_reach_spec(reach_, env, probe, &*facts.cluster)
                                   : Expected<core::ReachPlan>(usage_error(facts.cluster_error));
  if (nodes_ && reach) {
    const auto start = Clock::now();
    const auto& targets = reach->reach.targets;
    std::vector<std::string> args = {"__doctor-node", "--dst", dst_, "--exe", env.self_exe};
    pass_log_level(args);
    auto replies = ctx.node_query().ask_nodes(targets, core::RemoteCommand{args, core::Ship::when_missing}, reach->spec,
                                              timeout_s_, start_local);
    if (local.empty()) {
      start_local();  // a probe that did not call back
    }
    const auto need = env_bytes.valid() ? env_bytes.get().value_or(0) : 0;
    node_results = node_tier_results(replies, *reach, env.self_exe, dst_, timeout_s_, need, ms_since(start));
  } else {
    start_local();
    if (nodes_) {
      node_results.push_back(core::check_error("nodes", "no nodes to reach: " + reach.error().message,
                                               reach.error().kind == ErrorKind::config
                                                   ? "fix the config file's [yeet] table at the line named"
                                               : facts.cluster ? "use --transport ssh"
                                                               : "fix the scheduler check first"));
    }
  }

  std::vector<core::CheckResult> results;
  for (auto& f : local) {
    results.push_back(f.get());
    log_result(results.back());
  }
  // Discovery ran once for the checks that share it; count it in the first.
  if (!results.empty()) {
    results.front().duration_ms += facts_ms;
  }
  if (env_bytes.valid()) {
    env_bytes.wait();
  }
  for (const auto& r : node_results) {
    log_result(r);
  }
  results.insert(results.end(), node_results.begin(), node_results.end());
  core::settle_ezpz_check(results);  // a node-local ezpz that --nodes found on every host
  if (launch.valid()) {
    results.push_back(launch.get());
  }
  if (!script_.empty()) {
    for (auto& r : script_results(script_, script_text)) {
      results.push_back(std::move(r));
    }
  }
  if (json_) {
    ctx.term.print_json(core::doctor_json(results));
  } else {
    ctx.term.out() << core::doctor_text(results, ctx.term.color_out(), all_);
  }
  return core::doctor_exit_code(results);
}

}  // namespace ezpz::cli
