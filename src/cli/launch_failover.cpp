// ezpz launch --spare-nodes / --auto-retry: the job's nodes split into active and spare ones;
// after a failed attempt, a verdict from facts (the shims' reports, the launcher's words, a
// probe of each suspect) and, for a bad node, a spare swapped in and the job run again.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/launch.hpp"
#include "cli/launch_report.hpp"
#include "cli/reach_options.hpp"
#include "cli/terminal.hpp"
#include "core/base/strings.hpp"
#include "core/job/cluster.hpp"
#include "core/job/hostlist.hpp"
#include "core/job/node_failure.hpp"
#include "core/launch/failover_policy.hpp"
#include "core/launch/launch_dirs.hpp"

namespace ezpz::cli {
namespace {

/// The job's end: SLURM_JOB_END_TIME or EZPZ_JOB_END_TIME, else on PBS from qstat -f (once).
std::optional<double> end_of_job(Context& ctx) {
  if (auto t = core::job_end_time(ctx.env.get("SLURM_JOB_END_TIME"), ctx.env.get("EZPZ_JOB_END_TIME"))) {
    return t;
  }
  const auto id = ctx.env.get("PBS_JOBID");
  if (!id || !ctx.probe().find_program("qstat")) {
    return std::nullopt;
  }
  auto out = ctx.probe().run_program({"qstat", "-f", *id}, {}, {}, 10);
  return out && out->exit_code == 0 ? core::pbs_end_time(out->output) : std::nullopt;
}

double now_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// The fitness of `hosts` (failover's probe: __doctor-node --probe on each, over SSH by default);
/// this node (where ezpz runs) answers for itself.
std::vector<core::ProbeResult> probe_nodes(Context& ctx, const core::ReachOptions& options, const PlannedJob& job,
                                           const core::HostList& hosts) {
  std::vector<core::ProbeResult> out;
  core::ClusterInfo cluster = job.cluster;
  cluster.hosts = hosts;
  auto reach = core::plan_reach_spec(options, ctx.env, ctx.probe(), &cluster);
  if (!reach) {
    for (const auto& h : hosts) {
      out.push_back({h, true, "not probed: " + reach.error().message});  // no probe: no eviction
    }
    return out;
  }
  const auto& command = job.request.command;
  std::string need;
  if (!command.empty()) {
    need = command.front().front() == '/' ? command.front() : ctx.probe().find_program(command.front()).value_or("");
  }
  std::vector<std::string> args = {"__doctor-node", "--probe", "--dst", "/tmp"};
  if (job.cluster.gpus.known && job.cluster.gpus.per_node > 0) {
    args.insert(args.end(), {"--gpus", std::to_string(job.cluster.gpus.per_node)});
  }
  if (!need.empty()) {
    args.insert(args.end(), {"--need", need});
  }
  pass_log_level(args);  // -v: each node says what it found
  for (const auto& h : hosts) {
    if (std::find(reach->reach.targets.begin(), reach->reach.targets.end(), h) == reach->reach.targets.end()) {
      out.push_back({h, true, "this node"});
    }
  }
  const auto timeout = static_cast<int>(core::kProbeTimeoutS);
  for (const auto& o : ctx.node_commands().run_on_nodes(reach->reach.targets, args, reach->spec, timeout)) {
    auto j = nlohmann::json::parse(o.output.substr(0, o.output.find('\n')), nullptr, false);
    if (!o.error.empty() || !j.is_object()) {
      out.push_back({o.host, false, o.error.empty() ? "no answer in " + std::to_string(timeout) + " s" : o.error});
    } else {
      out.push_back({o.host, j.value("ok", false), j.value("why", std::string())});
    }
  }
  return out;
}

/// The attempt's verdict as a word for the record.
std::string verdict_word(core::VerdictKind kind) {
  switch (kind) {
    case core::VerdictKind::bad_nodes:
      return "bad_nodes";
    case core::VerdictKind::walltime:
      return "walltime";
    case core::VerdictKind::storage:
      return "storage";
    case core::VerdictKind::systemic:
      return "systemic";
    case core::VerdictKind::application:
      break;
  }
  return "application";
}

/// The bad-nodes file: one host a line, with why ("# ..."), for `ezpz submit --exclude-from`.
std::string bad_nodes_text(const std::vector<AttemptFacts>& facts) {
  std::string text = "# nodes ezpz launch evicted (ezpz submit --exclude-from FILE keeps the next job off them)\n";
  for (const auto& f : facts) {
    for (const auto& e : f.evicted) {
      text += e.host + "  # " + e.why + "\n";
    }
  }
  return text;
}

/// Where the attempts' time went (the last one succeeded or not).
core::Goodput attempts_goodput(const std::vector<AttemptFacts>& facts) {
  std::vector<std::pair<double, double>> spans;
  for (const auto& f : facts) {
    spans.emplace_back(f.started, f.ended);
  }
  return core::goodput(spans, !facts.empty() && facts.back().verdict == "success");
}

/// The summary of every attempt, when failover ran more than one or evicted a node.
void print_summary(Context& ctx, const std::vector<AttemptFacts>& facts) {
  const bool evicted =
      std::any_of(facts.begin(), facts.end(), [](const AttemptFacts& f) { return !f.evicted.empty(); });
  if (facts.size() < 2 && !evicted) {
    return;
  }
  ctx.term.err() << "ezpz: failover: " << core::count_of(facts.size(), "attempt") << '\n';
  for (std::size_t k = 0; k < facts.size(); ++k) {
    const auto& f = facts[k];
    char took[32];
    std::snprintf(took, sizeof(took), " (%.1f s)", f.ended - f.started);
    std::string line =
        "  attempt " + std::to_string(k + 1) + " on " + core::join(f.hosts, ",") + ": " + f.verdict + took;
    for (const auto& e : f.evicted) {
      line += "; " + e.host + " evicted (" + e.why + ")";
    }
    ctx.term.err() << line << '\n';
  }
  ctx.term.err() << "  " << core::goodput_line(attempts_goodput(facts)) << '\n';
}

/// What a failover step says: its warnings, the failure's lines and known remedy after the first
/// when the step says so.
void say_step(Context& ctx, const core::FailoverStep& step, const core::FailureSign& sign) {
  for (std::size_t i = 0; i < step.warnings.size(); ++i) {
    ctx.term.warn(step.warnings[i]);
    if (i == 0 && step.sign_after) {
      for (const auto& line : sign.lines) {
        ctx.term.err() << "  " << line << '\n';
      }
      if (!sign.remedy.empty()) {
        ctx.term.err() << "  known remedy: " << sign.remedy << '\n';
      }
    }
  }
}

}  // namespace

void check_node_failure_policy(Context& ctx) {
  using Kind = core::NodeFailureTolerance::Kind;
  const auto t = core::node_failure_tolerance(ctx.env, ctx.probe());
  if (t.kind == Kind::ends_job || t.kind == Kind::not_known) {
    ctx.term.warn(t.message + "; " + t.remedy);
  }
}

std::string failover_hostfile(const core::LaunchRequest& request, const core::Env& env, int k) {
  const auto dir = !request.record_dir.empty()
                       ? request.record_dir
                       : env.get("TMPDIR").value_or("/tmp") + "/ezpz-" + std::to_string(env.uid) + "-" +
                             (request.run_id.empty() ? "launch" : request.run_id);
  return dir + "/hostfile-" + std::to_string(k);
}

Expected<PlannedJob> plan_failover(Context& ctx, PlannedJob job, const core::FailoverRequest& failover) {
  if (!job.request.rank_env) {
    return usage_error("--spare-nodes needs the ranks' own reports (the rank shim): drop --no-rank-env");
  }
  if (job.request.launcher == std::string("local")) {
    return usage_error(
        "--spare-nodes needs a launcher that reaches other nodes (srun, mpiexec or mpirun), not the "
        "built-in local launcher");
  }
  EZPZ_TRY_ASSIGN(auto split, core::split_nodes(job.request.topology, job.cluster.hosts,
                                                core::default_ppn(job.cluster, job.plan.style), failover));
  EZPZ_TRY_ASSIGN(auto plan, core::plan_on_hosts(job.request, ctx.env, job.cluster, job.inventory, split,
                                                 failover_hostfile(job.request, ctx.env, 0), job.cluster.master_addr));
  plan.warnings.insert(plan.warnings.end(), job.cluster.warnings.begin(), job.cluster.warnings.end());
  job.plan = std::move(plan);
  job.split = std::move(split);
  return job;
}

core::Verdict LaunchCommand::judge(Context& ctx, const PlannedJob& job, const core::LaunchPlan& plan,
                                   const core::RunResult& result, AttemptFacts& facts) {
  core::AttemptEvidence evidence;
  evidence.ranks = facts.ranks;
  evidence.claims = core::launcher_claims(core::join(result.launcher_tail, "\n"));
  evidence.ended = now_epoch();
  evidence.stopped_at = result.stopped_at;
  evidence.job_end = job_end_;
  evidence.sign = core::classify_failure(facts.exits, result.launcher_tail, plan.topology.nprocs);
  facts.sign = evidence.sign;
  const auto suspects = core::find_suspects(evidence, plan.hosts);
  core::HostList probe;
  for (const auto& s : suspects) {
    probe.push_back(s.host);
  }
  if (probe.empty()) {
    probe = plan.hosts;  // nothing points at a node: ask every active one
  }
  ctx.term.warn("probing " + core::count_of(probe.size(), "node") + ": " + core::join(probe, ", "));
  facts.probes = probe_nodes(ctx, reach_, job, probe);
  auto verdict = core::decide(evidence, suspects, facts.probes);
  facts.verdict = verdict_word(verdict.kind);
  facts.evicted = verdict.evicted;
  return verdict;
}

Expected<std::pair<core::RunResult, int>> LaunchCommand::run_failover(Context& ctx, const PlannedJob& job,
                                                                      std::optional<core::FirstFailure>& failure,
                                                                      std::vector<AttemptFacts>& facts) {
  core::RunResult result;
  core::NodeSplit split = *job.split;
  core::LaunchPlan plan = job.plan;
  int attempt = 0;
  core::FailoverState state;  // swaps, retries used, silent and storage attempts in a row
  const core::FailoverLimits limits{.retries = retries_, .max_swaps = failover_.max_retries};
  std::string last_failure;  // what the latest attempt's failure was
  job_end_ = end_of_job(ctx);
  check_node_failure_policy(ctx);
  const auto bad_nodes = job.request.record_dir.empty() ? "" : job.request.record_dir + "/bad-nodes";
  while (true) {
    // 1. This attempt's plan: its nodes named to the launcher, its own record directory.
    const auto this_try = core::plan_for_attempt(plan, attempt++);
    if (this_try.write_hostfile) {
      if (auto w = ctx.probe().write_file(this_try.hostfile, core::join(this_try.hosts, "\n") + "\n"); !w) {
        return ezpz::failure(w.error().message);
      }
    }
    for (const auto& dir : core::launch_dirs(this_try)) {
      (void)ctx.probe().make_dirs(dir);
    }
    if (job_end_ && now_epoch() + failover_.min_attempt_s > *job_end_) {
      ctx.term.warn("no attempt " + std::to_string(attempt) + ": the job ends in " +
                    std::to_string(static_cast<int>(*job_end_ - now_epoch())) + " s, less than --min-attempt-time " +
                    std::to_string(static_cast<int>(failover_.min_attempt_s)) + " s");
      break;
    }
    // 2. Run it; a success or a signal to ezpz ends the job.
    const double started = now_epoch();
    auto& f = facts.emplace_back();
    f.hosts = this_try.hosts;
    f.started = started;
    EZPZ_TRY_ASSIGN(auto r, run_once(ctx, this_try, f));
    f.ended = now_epoch();
    result = r;
    if (result.exit_code == 0 || result.signal != 0) {
      f.verdict = result.exit_code == 0 ? "success" : "interrupted";
      break;
    }
    if (!result.timed_out) {
      failure = result.blocked.empty() && !result.not_started ? find_first_failure(ctx, this_try, result, started, f)
                                                              : std::nullopt;
      last_failure = report_failure(ctx, this_try, result, failure, started, attempt);
      result.exit_code = core::job_exit_code(result, failure);
    }
    // 3. The verdict, from facts; then what comes next (core): stop, the same nodes again, or a swap.
    const auto verdict = judge(ctx, job, this_try, result, f);
    if (verdict.kind == core::VerdictKind::bad_nodes && !bad_nodes.empty()) {
      (void)ctx.probe().write_file(bad_nodes, bad_nodes_text(facts));
    }
    const bool said_nothing =
        std::all_of(f.ranks.begin(), f.ranks.end(), [](const core::RankWatch& w) { return w.last_output == 0; });
    auto step = core::next_failover_step(state, verdict, f.sign, said_nothing, split, limits);
    say_step(ctx, step, f.sign);
    if (step.kind == core::FailoverStep::Kind::stop) {
      break;
    }
    if (step.kind == core::FailoverStep::Kind::swap) {
      split = std::move(step.split);
      EZPZ_TRY_ASSIGN(auto next,
                      core::plan_on_hosts(job.request, ctx.env, job.cluster, job.inventory, split,
                                          failover_hostfile(job.request, ctx.env, attempt),
                                          core::master_address(split.active, job.cluster.machine, ctx.probe()),
                                          core::AttemptAfter::swap));
      plan = std::move(next);
    }
    // 4. A short backoff; Ctrl-C during it starts nothing.
    const double delay = retry_delay_given_ ? retry_delay_s_ : 2.0;
    ctx.term.warn("attempt " + std::to_string(attempt + 1) + " on " + core::join(plan.hosts, ",") + " in " +
                  std::to_string(static_cast<int>(delay)) + " s");
    if (!ctx.jobs().sleep_unless_interrupted(delay)) {
      result.signal = SIGINT;
      result.exit_code = 128 + SIGINT;
      break;
    }
  }
  print_summary(ctx, facts);
  if (result.exit_code != 0 && result.signal == 0 && !last_failure.empty()) {  // the outcome: the last attempt's
    ctx.term.error("job failed" + (attempt > 1 ? " after " + std::to_string(attempt) + " attempts" : std::string()) +
                   ": " + last_failure);
  }
  return std::make_pair(result, attempt);
}

void add_failover(nlohmann::ordered_json& record, const core::NodeSplit& split, const std::vector<AttemptFacts>& facts,
                  const std::string& bad_nodes_file) {
  auto attempts = nlohmann::ordered_json::array();
  for (const auto& f : facts) {
    auto evicted = nlohmann::ordered_json::array();
    for (const auto& e : f.evicted) {
      evicted.push_back({{"host", e.host}, {"why", e.why}, {"evidence", e.evidence}});
    }
    auto probes = nlohmann::ordered_json::array();
    for (const auto& p : f.probes) {
      probes.push_back({{"host", p.host}, {"ok", p.ok}, {"why", p.why}});
    }
    attempts.push_back({{"hosts", f.hosts},
                        {"verdict", f.verdict},
                        {"seconds", f.ended - f.started},
                        {"evicted", evicted},
                        {"probes", probes}});
  }
  const bool any = std::any_of(facts.begin(), facts.end(), [](const AttemptFacts& f) { return !f.evicted.empty(); });
  const auto g = attempts_goodput(facts);
  record["failover"] = {
      {"active_hosts", split.active},
      {"spare_hosts", split.spare},
      {"attempts", attempts},
      {"goodput", {{"total_s", g.total_s}, {"useful_s", g.useful_s}, {"lost_s", g.lost_s}, {"share", g.share}}},
      {"bad_nodes_file", any ? bad_nodes_file : ""}};
}

}  // namespace ezpz::cli
