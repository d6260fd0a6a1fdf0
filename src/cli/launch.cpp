#include "cli/launch.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <ctime>
#include <system_error>

#include <CLI/App.hpp>
#include <CLI/Validators.hpp>
#include <nlohmann/json.hpp>

#include "cli/launch_args.hpp"
#include "cli/launch_records.hpp"
#include "cli/launch_report.hpp"
#include "cli/reach_options.hpp"
#include "cli/terminal.hpp"
#include "core/base/log.hpp"
#include "core/base/shell.hpp"
#include "core/base/strings.hpp"
#include "core/job/job_record.hpp"
#include "core/launch/job_stop.hpp"
#include "core/launch/launch_dirs.hpp"

namespace ezpz::cli {
namespace {

/// A command that cannot be what the user meant: a Python file with no interpreter (and no #! line).
std::string command_problem(const core::SystemProbe& probe, const std::vector<std::string>& command) {
  if (command.empty()) {
    return "";
  }
  const auto& first = command.front();
  if (first.find('/') != std::string::npos) {
    if (const auto st = probe.file_stamp(first); st && st->directory) {
      return first + " is a directory, not a program: name the program to run (e.g. ezpz launch -- python3 " + first +
             "/train.py)";
    }
  } else if ((first == "python" || first == "python2") && !probe.find_program(first) && probe.find_program("python3")) {
    std::string rest;
    for (std::size_t i = 1; i < command.size() && i < 4; ++i) {
      rest += " " + command[i];
    }
    return first + ": command not found, but python3 is on PATH: ezpz launch -- python3" + rest + " ...";
  }
  const bool python_file = first.size() > 3 && first.compare(first.size() - 3, 3, ".py") == 0;
  auto text = python_file && probe.is_file(first) ? probe.read_file(first) : Expected<std::string>(std::string());
  if (python_file && !(text && text->rfind("#!", 0) == 0)) {
    std::string rest;
    for (std::size_t i = 1; i < command.size() && i < 4; ++i) {
      rest += " " + command[i];
    }
    return first + " is a Python file, not a program: did you mean python3 " + first + rest +
           "? (ezpz launch -- python3 " + first + " ...)";
  }
  return "";
}

double epoch_seconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

std::string iso_time(std::chrono::system_clock::time_point t, const char* format) {
  auto secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), format, &tm);
  return buf;
}

}  // namespace

double retry_delay(int k, double base) {
  double d = base;
  for (int i = 0; i < k && d < 60; ++i) {
    d *= 2;
  }
  return std::min(d, std::max(base, 60.0));
}

void LaunchCommand::add_cli(CLI::App& app) {
  app_ = &app;
  app.add_option("-n,--nproc,--np,--nprocs,--world-size,--world_size", nprocs_, "Total number of processes")
      ->type_name("N");
  app.add_option("--ppn,--nproc-per-node,--nproc_per_node", ppn_, "Processes per host")->type_name("N");
  app.add_option("--nhosts,--nh,--nhost,--nnode,--nnodes", nhosts_, "Number of hosts to use")->type_name("N");
  app.add_option("--hostfile", hostfile_, "File with one host per line (default: the job's own)")->type_name("FILE");
  app.add_option("--machine", machine_, "Use this machine's profile instead of detecting it (also EZPZ_MACHINE)")
      ->type_name("MACHINE");
  app.add_option("--launcher", launcher_, "Launcher to use instead of the machine's")
      ->check(CLI::IsMember({"mpiexec", "mpirun", "srun", "local"}));
  app.add_option("--cpu-bind", cpu_bind_, "CPU binding for mpiexec/srun (beats CPU_BIND and the machine default)")
      ->type_name("BIND");
  app.add_option("--gpu-bind", gpu_bind_, "Pin each rank to one GPU by its local rank (auto: the machine's way)")
      ->check(CLI::IsMember({"auto", "cuda", "ze", "rocr", "none"}));
  app.add_flag("--no-rank-env", no_rank_env_, "Do not set RANK, WORLD_SIZE, LOCAL_RANK, ... for each rank");
  app.add_flag("--label", label_, "Prefix every output line with its host and rank: [host rank]");
  app.add_option("--log-dir", log_dir_,
                 "Each rank's stdout and stderr in files here (rank-R.HOST.out, .err; default: the launch's record "
                 "directory; node-local paths work: each node writes its own ranks')")
      ->type_name("DIR");
  app.add_option("--console-ranks,--local-ranks-filter,--local_ranks_filter", console_,
                 "Show only these ranks' lines on the terminal (0,3 or 0-3,8); the files keep every rank's")
      ->type_name("RANKS");
  app.add_option("--idle-timeout,--timeout", timeout_s_,
                 "Stop the job after this many seconds without output (exit 124)")
      ->type_name("SECONDS")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--time-limit", time_limit_s_, "Stop the job after this many seconds in all, output or not (exit 124)")
      ->type_name("SECONDS")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--start-timeout", start_timeout_s_,
                 "Seconds to wait for the first rank to start before saying why none did (the scheduler's down "
                 "nodes) and stopping (exit 255; default: the machine's, 30; 0: wait forever)")
      ->type_name("SECONDS")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--kill-after", kill_after_s_, "Seconds between SIGTERM/SIGINT and SIGKILL of the job (default 10)")
      ->type_name("SECONDS")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--retries", retries_, "Run a failed job again up to N times (backoff 5, 10, 20, 40, 60 s)")
      ->type_name("N")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--retry-delay", retry_delay_s_,
                 "First retry delay in seconds, doubled each time up to 60 (default 5)")
      ->type_name("SECONDS")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--spare-nodes", spare_nodes_,
                 "Keep N of the job's nodes (auto: all that -n/--nhosts leave) as spares: a node found bad after a "
                 "failure is swapped for one and the job runs again (implies --auto-retry)")
      ->type_name("N|auto");
  app.add_flag("--auto-retry", auto_retry_,
               "Fail over to spare nodes when a node is found bad (spares: --spare-nodes, default auto)");
  app.add_option("--max-failover-retries", max_failover_retries_,
                 "Swap spares in at most K times (default: until the spares run out)")
      ->type_name("K")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--min-attempt-time", min_attempt_s_,
                 "Start no failover attempt less than this many seconds before the job's end (default 120)")
      ->type_name("SECONDS")
      ->check(CLI::NonNegativeNumber);
  add_reach_options(app, reach_, "With --spare-nodes, how suspect nodes are probed: ", HsnFlag::none);
  app.add_flag("--keep-going", keep_going_,
               "Built-in launcher: let the other ranks finish when one fails (default: stop them)");
  app.add_flag("--no-record", no_record_,
               "Write no record of this launch under ~/.ezpz/jobs (also EZPZ_NO_RECORD=1; ranks then get no "
               "directory for error files). The newest 100 records are kept (EZPZ_KEEP_RECORDS=N, 0 keeps all)");
  app.add_flag("--dry-run", dry_run_, "Print the launch command instead of running it");
  app.add_flag("--print-env", print_env_, "Print the environment each rank would get, then exit");
  app.add_flag("--json", json_, "With --dry-run or --print-env: print JSON");
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

void LaunchCommand::normalize(std::vector<std::string>& tokens, bool had_separator) {
  auto split = split_launch_tokens(tokens, had_separator, *app_);
  tokens = std::move(split.ezpz);
  launcher_tokens_ = std::move(split.launcher);
  token_error_ = std::move(split.error);
  globals_ = std::move(split.global);
}

void LaunchCommand::set_trailing_command(std::vector<std::string> command, bool had_separator) {
  request_ = {};
  request_error_.clear();
  request_error_ = token_error_;
  if (had_separator) {
    request_.launcher_args = launcher_tokens_;
    request_.command = std::move(command);
  } else {
    request_.command = positional_;
  }

  auto set_if = [](CLI::App* app, const char* name, auto& field, const auto& value) {
    if (app->count(name) > 0) {
      field = value;
    }
  };
  set_if(app_, "--np", request_.topology.nprocs, nprocs_);
  set_if(app_, "--ppn", request_.topology.ppn, ppn_);
  set_if(app_, "--start-timeout", request_.start_timeout_s, start_timeout_s_);
  set_if(app_, "--nhosts", request_.topology.nhosts, nhosts_);
  set_if(app_, "--hostfile", request_.hostfile, hostfile_);
  set_if(app_, "--machine", request_.machine, machine_);
  set_if(app_, "--launcher", request_.launcher, launcher_);
  set_if(app_, "--cpu-bind", request_.cpu_bind, cpu_bind_);
  set_if(app_, "--gpu-bind", request_.gpu_bind, gpu_bind_);
  request_.rank_env = !no_rank_env_;
  request_.label = label_;
  if (app_->count("--log-dir") > 0) {
    request_.log_dir = log_dir_;
  }
  if (app_->count("--console-ranks") > 0) {
    auto ranges = core::parse_rank_ranges(console_, "--console-ranks");
    if (!ranges && request_error_.empty()) {
      request_error_ = ranges.error().message;
    }
    request_.console = ranges ? core::ranges_text(*ranges) : "";
  }
  failover_ = {};
  retry_delay_given_ = app_->count("--retry-delay") > 0;
  failover_.on = auto_retry_ || app_->count("--spare-nodes") > 0;
  failover_.min_attempt_s = min_attempt_s_;
  if (app_->count("--max-failover-retries") > 0) {
    failover_.max_retries = max_failover_retries_;
  }
  if (app_->count("--spare-nodes") > 0) {
    auto n = core::parse_spare_nodes(spare_nodes_);
    if (!n && request_error_.empty()) {
      request_error_ = n.error().message;
    }
    failover_.spares = n ? *n : std::nullopt;
  }
  if (json_ && !dry_run_ && !print_env_ && request_error_.empty()) {
    request_error_ = "--json needs --dry-run or --print-env";
  }
}

int LaunchCommand::run(Context& ctx) {
  if (request_error_.empty()) {
    request_error_ = command_problem(ctx.probe(), request_.command);
  }
  if (!request_error_.empty()) {
    return ctx.term.fail(usage_error(request_error_));
  }
  // 1. Plan: the job's identity (its id, a record directory for this launch), then the line.
  const auto start_wall = std::chrono::system_clock::now();
  const auto stamp = iso_time(start_wall, "%Y%m%dT%H%M%S");
  auto request = request_;
  request.max_restarts = retries_;
  // Each launch its own directory in --log-dir (a run again overwrites nothing), `latest` its link.
  const auto logs = core::plan_log_dirs(request.log_dir, ctx.env.get("PWD").value_or("."), stamp, ctx.env.pid);
  if (!logs.base.empty()) {
    request.log_dir = logs.run;
  }
  const bool record = core::records_wanted(ctx.env, no_record_);
  // A dry run looks nothing up on the network (a lost DNS answer costs 5 s).
  auto job = plan_job(ctx, request, stamp, record, dry_run_ ? core::Lookups::none : core::Lookups::network, &failover_);
  if (!job) {
    return ctx.term.fail(job.error());
  }
  const auto& plan = job->plan;
  for (const auto& w : plan.warnings) {
    ctx.term.warn(w);
  }
  // 2. Show it (with what failover needs of the scheduler)...
  if (print_env_ || dry_run_) {
    if (job->split && dry_run_) {
      check_node_failure_policy(ctx);
    }
    show_plan(ctx, plan, job->cluster);
    return 0;
  }
  // 3. ...or run it, again after failures when asked; say which rank failed first and why.
  if (!logs.base.empty()) {  // another user's directory is refused, with why
    if (auto made = ctx.probe().make_dirs(logs.base); !made) {
      return ctx.term.fail(usage_error("--log-dir " + logs.base + ": " + made.error().message));
    }
    (void)ctx.probe().make_dirs(logs.run);
    if (auto linked = ctx.probe().point_link(logs.base + "/latest", logs.name); !linked) {
      ctx.term.warn(linked.error().message);
    }
    log::info("each rank's output: " + logs.run + "/rank-R.HOST.out and .err (also " + logs.base + "/latest)");
  }
  for (const auto& note : plan.notes) {
    ctx.term.warn(note);
  }
  if (keep_going_ && (plan.style == core::LauncherStyle::openmpi || plan.style == core::LauncherStyle::sophia)) {
    ctx.term.warn("--keep-going is ignored by " + plan.launcher +
                  ": Open MPI ends the job when a rank fails (the built-in launcher, srun and MPICH let the others "
                  "finish)");
  }
  const auto start = std::chrono::steady_clock::now();
  log::info("launch: " + core::shell_command_line(plan.env, plan.argv));
  std::optional<core::FirstFailure> failure;
  std::vector<AttemptFacts> facts;
  std::optional<RecordPruner> pruner;
  const auto records = core::plan_record_steps(plan, {.record = record, .failover = job->split.has_value()});
  first_dirs_ = records.make_first;
  if (records.prune) {
    // Once the ranks run: its directory reads and its thread's first memory held up their start.
    after_start_ = [this, &pruner, &ctx, folder = records.job_folder] {
      try {
        if (!pruner) {
          pruner.emplace(ctx, folder, first_dirs_);
        }
      } catch (const std::system_error& e) {  // no thread to be had (a process or address-space limit)
        log::info(std::string("old job records not pruned this time: ") + e.what());  // the job runs on
        for (const auto& dir : first_dirs_) {
          (void)ctx.probe().make_dirs(dir);
        }
      }
    };
  }
  auto ran = job->split ? run_failover(ctx, *job, failure, facts) : run_attempts(ctx, plan, failure, facts);
  after_start_ = nullptr;
  if (pruner) {
    pruner->finish();
  }
  if (!ran) {
    return ctx.term.fail(ran.error());
  }
  const auto& [result, attempts] = *ran;
  // No rank left an error file or a report: no empty folders either (rmdir leaves any other).
  for (const auto& dir : core::record_dirs_to_tidy(plan, attempts)) {
    (void)ctx.probe().remove_empty_dir(dir);
  }
  // 4. Record what happened.
  LaunchTimes times{iso_time(start_wall, "%Y-%m-%dT%H:%M:%SZ"),
                    iso_time(std::chrono::system_clock::now(), "%Y-%m-%dT%H:%M:%SZ"),
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
  if (auto path = core::record_path(ctx.env, plan.scheduler, stamp); path && record) {
    // Built once and dumped once (a dump parsed again for each addition cost 0.1 ms a launch).
    auto record_doc = record_object(plan, job->cluster, request_.command, times, result, attempts, failure);
    add_rank_hosts(record_doc, plan, facts);
    if (job->split) {
      add_failover(record_doc, *job->split, facts, job->request.record_dir + "/bad-nodes");
    }
    if (auto written = ctx.probe().write_file(*path, record_doc.dump(2) + "\n"); !written) {
      ctx.term.warn("job record not saved (" + written.error().message + "): set EZPZ_HOME to a writable directory");
    } else {
      log::info("record: " + *path);
    }
  }
  return result.exit_code;
}

void LaunchCommand::show_plan(Context& ctx, const core::LaunchPlan& plan, const core::ClusterInfo& cluster) const {
  if (print_env_ && json_) {
    ctx.term.print_json(rank_env_report(plan, ctx.env, Format::json));
  } else if (print_env_) {
    ctx.term.out() << rank_env_report(plan, ctx.env, Format::text);
  } else if (json_) {
    ctx.term.print_json(plan_json(plan, cluster, ctx.env));
  } else {
    if (!plan.spare_hosts.empty()) {
      ctx.term.warn("spare " + std::string(plan.spare_hosts.size() == 1 ? "node" : "nodes") +
                    " (not in this line): " + core::join(plan.spare_hosts, ", "));
    }
    ctx.term.out() << dry_run_line(plan, ctx.term.out_is_tty()) << '\n';
  }
}

Expected<std::pair<core::RunResult, int>> LaunchCommand::run_attempts(Context& ctx, const core::LaunchPlan& plan,
                                                                      std::optional<core::FirstFailure>& failure,
                                                                      std::vector<AttemptFacts>& facts) {
  core::RunResult result;
  int attempt = 0;
  while (true) {
    const auto this_try = core::plan_for_attempt(plan, attempt++);
    if (attempt > 1 || first_dirs_.empty()) {  // (else made once the launcher runs: run())
      for (const auto& dir : core::launch_dirs(this_try)) {
        (void)ctx.probe().make_dirs(dir);  // torch's @record writes there; the ranks' output files
      }
    }
    const double started = epoch_seconds(std::chrono::system_clock::now());
    EZPZ_TRY_ASSIGN(auto r, run_once(ctx, this_try, facts.emplace_back()));
    result = r;
    if (result.exit_code != 0 && result.signal == 0 && !result.timed_out) {
      if (result.blocked.empty() && !result.not_started) {  // else the ranks were stopped, or never ran
        failure = find_first_failure(ctx, this_try, result, started, facts.back());
      }
      report_failure(ctx, this_try, result, failure, started);
      result.exit_code = core::job_exit_code(result, failure);  // the rank's, when the launcher died of it
    }
    if (result.exit_code == 0 || result.signal != 0 || attempt > retries_) {
      break;
    }
    const double delay = retry_delay(attempt - 1, retry_delay_s_);
    ctx.term.warn("attempt " + std::to_string(attempt) + " of " + std::to_string(retries_ + 1) + " ended with code " +
                  std::to_string(result.exit_code) + ": retrying in " + std::to_string(static_cast<int>(delay)) + " s");
    if (!ctx.jobs().sleep_unless_interrupted(delay)) {
      result.signal = SIGINT;
      result.exit_code = 128 + SIGINT;
      break;
    }
  }
  return std::make_pair(result, attempt);
}

Expected<core::RunResult> LaunchCommand::run_once(Context& ctx, const core::LaunchPlan& plan, AttemptFacts& facts) {
  EZPZ_TRY_ASSIGN(
      auto result,
      run_plan(ctx, plan, SupervisionOptions{timeout_s_, time_limit_s_, kill_after_s_, keep_going_, after_start_},
               &facts));
  // Every rank's shim saw its command end with 0, and then the launcher failed (its teardown:
  // PALS, Slurm): the work is done, nothing to retry.
  if (result.exit_code != 0 && result.signal == 0 && !result.timed_out && facts.hub &&
      core::every_rank_succeeded(facts.ranks, plan.topology.nprocs)) {
    ctx.term.warn("every rank ended with code 0, then " + plan.launcher + " exited with code " +
                  std::to_string(result.exit_code) + " (in its teardown): the job succeeded");
    result.exit_code = 0;
    result.failed = -1;
  }
  return result;
}

Expected<PlannedJob> plan_job(Context& ctx, core::LaunchRequest request, std::string_view timestamp, bool record,
                              core::Lookups lookups, const core::FailoverRequest* failover) {
  // 1. Machine profiles: built-in, then the user's config.
  EZPZ_TRY_ASSIGN(auto machines, core::load_machines(ctx.env, ctx.probe()));
  if (auto settings = core::load_launch_settings(ctx.env, ctx.probe())) {
    request.omp_notice = settings->omp_notice;
  } else {
    return settings.error();
  }
  // 2. Scheduler, machine, hosts and GPUs of this job.
  EZPZ_TRY_ASSIGN(auto cluster,
                  core::discover_cluster(ctx.env, machines, request.machine, request.hostfile, ctx.probe(), lookups));
  // -v: what every command that plans a job (launch, env, doctor, test) found, and from where.
  log::info("job: scheduler " + std::string(core::to_string(cluster.scheduler)) + ", machine " + cluster.machine.name +
            (cluster.machine_reason.empty() ? "" : " (" + cluster.machine_reason + ")") + ", " +
            core::count_of(cluster.hosts.size(), "host") + " from " + cluster.host_source.origin +
            (cluster.host_source.value.empty() ? "" : " " + cluster.host_source.value) + ", " +
            core::count_of(cluster.gpus.per_node, "GPU") + " per node from " + cluster.gpus.detail);
  // 3. A port for MASTER_PORT, held until we exit; the launcher programs; the plan.
  if (request.rank_env && !ctx.env.has("MASTER_PORT")) {
    cluster.master_port = ctx.jobs().reserve_tcp_port();
  }
  if (!timestamp.empty()) {
    request.run_id = core::job_run_id(ctx.env, cluster.scheduler, timestamp);
    request.record_dir = record ? core::record_dir(ctx.env, cluster.scheduler, timestamp).value_or("") : "";
  }
  auto inventory = core::find_launchers(ctx.probe(), request.launcher);
  // -vv: the launchers found on PATH, each with the dialect it speaks.
  const auto found = [](const char* name, const std::optional<core::LauncherProgram>& p) {
    return std::string(name) + " " +
           (p && p->path ? *p->path + " (" + std::string(core::to_string(p->style)) + ")" : std::string("not found"));
  };
  log::debug("launchers: " + found("mpiexec", inventory.mpiexec) + ", " + found("mpirun", inventory.mpirun) + ", " +
             found("srun", inventory.srun));
  if (failover != nullptr && failover->on) {
    PlannedJob job;  // (named: gcc -O3 warns of the temporary's fields)
    job.cluster = std::move(cluster);
    job.request = request;
    job.inventory = inventory;
    return plan_failover(ctx, std::move(job), *failover);
  }
  EZPZ_TRY_ASSIGN(auto plan, core::plan_launch(request, ctx.env, cluster, inventory));
  plan.warnings.insert(plan.warnings.end(), cluster.warnings.begin(), cluster.warnings.end());
  return PlannedJob{std::move(plan), std::move(cluster), std::nullopt, request, inventory};
}

namespace {

/// The built-in launcher's ranks: their environment, labels, files and console.
std::vector<core::ProcessSpec> local_processes(Context& ctx, const core::LaunchPlan& plan, core::RunOptions& options) {
  std::vector<core::ProcessSpec> processes;
  const std::string host = ctx.env.hostname.empty() ? "localhost" : ctx.env.hostname;
  const auto console = core::parse_rank_ranges(plan.rank.console, "--console-ranks");
  for (int r = 0; r < plan.topology.nprocs; ++r) {
    auto env = core::local_rank_environment(plan, ctx.env, r);
    if (!ctx.env.has("PYTHONUNBUFFERED")) {
      env.emplace_back("PYTHONUNBUFFERED", "1");  // lines appear as written, as on a terminal
    }
    core::ProcessSpec spec{.argv = plan.argv,
                           .set = std::move(env),
                           .unset = {},
                           .label = core::rank_label(host, r),
                           .log_out = "",
                           .log_err = "",
                           .console = true,
                           .host = host};
    if (!plan.rank.log_dir.empty()) {
      spec.log_out = core::rank_log_path(plan.rank.log_dir, r, host, 1);
      spec.log_err = core::rank_log_path(plan.rank.log_dir, r, host, 2);
    }
    spec.console = plan.rank.console.empty() || (console && core::in_ranges(*console, r));
    processes.push_back(std::move(spec));
    options.names.push_back("rank " + std::to_string(r) + " on " + host);
  }
  return processes;
}

/// The rank hub for a launcher's ranks, its address and secret in the launcher's environment;
/// none (the shims then write whole lines through the launcher) when it cannot listen.
std::unique_ptr<core::RankHub> open_hub(Context& ctx, const core::LaunchPlan& plan, double kill_after_s,
                                        core::EnvList& env) {
  core::HubOptions options;
  // Where the shims call: this node by its name as the job's nodes know it; loopback when every
  // rank runs here (no name to look up).
  const bool here = std::all_of(plan.hosts.begin(), plan.hosts.end(), [&](const std::string& h) {
    return core::short_hostname(h) == core::short_hostname(ctx.env.hostname);
  });
  options.host = here || ctx.env.hostname.empty() ? "127.0.0.1" : ctx.env.hostname;
  options.nprocs = plan.topology.nprocs;
  options.label = plan.label;
  if (auto console = core::parse_rank_ranges(plan.rank.console, "--console-ranks");
      console && !plan.rank.console.empty()) {
    options.console = *console;
  }
  options.kill_after_s = kill_after_s;
  options.stops_ranks = core::stops_through_shims(plan.style);
  auto hub = ctx.ranks().open_hub(options);
  if (!hub) {
    ctx.term.warn(hub.error().message + ": the ranks' lines come through " + plan.launcher);
    return nullptr;
  }
  env.emplace_back(core::kHubVar, (*hub)->address());
  env.emplace_back(core::kHubKeyVar, (*hub)->key());
  return std::move(*hub);
}

/// Why no rank of the plan started: the job's nodes its scheduler has down (asked for at most 10 s).
std::vector<std::string> not_started_lines(Context& ctx, const core::LaunchPlan& plan, int nprocs) {
  const auto command = core::node_state_command(plan.scheduler, plan.hosts);
  std::vector<core::NodeDown> down;
  bool asked = false;
  if (!command.empty()) {
    if (auto out = ctx.probe().run_program(command, {}, {}, 10); out && out->exit_code == 0) {
      asked = true;
      down = core::parse_node_states(plan.scheduler, out->output, plan.hosts);
    }
  }
  return core::not_started_report(plan.launcher, plan.start_timeout_s, nprocs, down, asked);
}

/// What the built-in launcher's ranks did, as the hub would have said it.
void local_facts(Context& ctx, const core::LaunchPlan& plan, AttemptFacts& facts) {
  for (int r = 0; r < plan.topology.nprocs; ++r) {
    facts.ranks.push_back({r, ctx.env.hostname, true, 0, 0, 0, ""});
  }
}

}  // namespace

Expected<core::RunResult> run_plan(Context& ctx, const core::LaunchPlan& plan, const SupervisionOptions& supervision,
                                   AttemptFacts* facts) {
  core::RunOptions options;
  options.timeout_s = supervision.timeout_s;
  options.time_limit_s = supervision.time_limit_s;
  options.kill_after_s = supervision.kill_after_s;
  options.notice = [&ctx](std::string_view message) { ctx.term.warn(message); };
  options.started_epoch = epoch_seconds(std::chrono::system_clock::now());
  options.on_started = supervision.started;
  options.whole_lines = true;  // lines never merge: the ranks' with each other, or with the launcher's
  const int n = plan.topology.nprocs;
  const std::string ranks = std::to_string(n) + (n == 1 ? " rank" : " ranks");
  std::vector<core::ProcessSpec> processes;
  std::unique_ptr<core::RankHub> hub;
  options.stop_on_failure = !supervision.keep_going;  // a failing rank stops the job, under every launcher
  if (plan.style == core::LauncherStyle::local) {
    options.label = plan.label;
    options.stop_what = ranks;
    options.stop_what_many = n != 1;
    processes = local_processes(ctx, plan, options);
  } else {
    options.is_launcher = true;
    options.stop_what = plan.launcher + " (" + ranks + ")";
    options.ranks_what = ranks;
    options.interrupt_twice = plan.style == core::LauncherStyle::srun;
    auto env = plan.env;
    hub = plan.rank_env ? open_hub(ctx, plan, supervision.kill_after_s, env) : nullptr;
    options.side = hub.get();
    options.start_timeout_s = plan.start_timeout_s;
    options.not_started = [&ctx, &plan, n]() { return not_started_lines(ctx, plan, n); };
    // Open MPI's mpirun, stopped, SIGKILLs its ranks within milliseconds (and all of them once
    // one ends): ezpz stops them through their shims instead, each with --kill-after for its handler.
    options.stop_ranks_first = core::stops_through_shims(plan.style);
    if (hub) {  // the launcher's streams carry its own words only: the ranks' come through the hub
      options.launcher_blocked = [launcher = plan.launcher](const std::vector<std::string>& lines) {
        return core::launcher_blocked(launcher, lines);
      };
    }
    processes.push_back({plan.argv, std::move(env), plan.unset_env, "", "", "", true, plan.launcher});
    options.names.push_back(plan.launcher);
  }
  auto result = ctx.jobs().run(processes, options);
  if (facts != nullptr && hub) {
    facts->hub = true;
    facts->exits = hub->exits();
    facts->ranks = hub->ranks();
  } else if (facts != nullptr && plan.style == core::LauncherStyle::local) {
    local_facts(ctx, plan, *facts);
  }
  return result;
}

}  // namespace ezpz::cli
