#include "cli/kill.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include <CLI/App.hpp>
#include <CLI/Validators.hpp>
#include <nlohmann/json.hpp>

#include "cli/reach_options.hpp"
#include "cli/terminal.hpp"
#include "core/base/log.hpp"
#include "core/base/strings.hpp"
#include "core/job/kill.hpp"
#include "core/reach/agents.hpp"

namespace ezpz::cli {

void KillCommand::add_cli(CLI::App& app) {
  app.add_option("pattern,--pattern", pattern_, "Only jobs whose id (MASTER_ADDR:PORT) or command line contains this")
      ->type_name("PATTERN");
  app.add_flag("--all-nodes", all_nodes_, "Also on every other node of the job (as yeet reaches them: --transport)");
  app.add_option("--hostfile", reach_.hostfile, "The nodes for --all-nodes (default: the job's, as for launch)")
      ->type_name("FILE");
  app.add_option("--signal", signal_, "TERM (default), INT, HUP, QUIT, USR1, USR2 or KILL")->type_name("SIG");
  app.add_option("--grace", grace_s_, "Seconds before KILL for processes still running (default 3; 0: never)")
      ->type_name("S");
  app.add_flag("--dry-run", dry_run_, "List what would be signalled; signal nothing");
  app.add_flag("--all-users", all_users_, "As root: every user's ezpz processes, not only root's own");
  app.add_flag("--json", json_, "Print one JSON object per node instead of text");
  add_reach_options(app, reach_, "With --all-nodes: ", HsnFlag::none);
  add_node_log_level(app, log_level_);
  app.footer(
      "Examples:\n"
      "  ezpz kill                      # every ezpz-launched process of mine on this node\n"
      "  ezpz kill train.py --all-nodes # those running train.py, on every node of the job\n"
      "  ezpz kill --dry-run --signal INT");
}

/// `ezpz kill --json ...` on every other node, over the planned transport: their reports added
/// to `reports`; true when one failed or left a process running.
bool KillCommand::other_nodes(Context& ctx, const core::ReachPlan& reach, std::vector<nlohmann::json>& reports) const {
  std::vector<std::string> args = {"kill", "--json", "--signal", signal_, "--grace", std::to_string(grace_s_)};
  pass_log_level(args);
  if (dry_run_) {
    args.emplace_back("--dry-run");
  }
  if (all_users_) {
    args.emplace_back("--all-users");
  }
  if (!pattern_.empty()) {
    args.push_back("--pattern=" + pattern_);
  }
  bool failed = false;
  for (const auto& o : ctx.node_commands().run_on_nodes(reach.reach.targets, args, reach.spec, 30 + grace_s_)) {
    auto j = nlohmann::json::parse(o.output.substr(0, o.output.find('\n')), nullptr, false);
    const bool refused = j.is_object() && !j.value("ok", true);  // its failure object
    if (!o.error.empty() || j.is_discarded() || !j.is_object() || refused) {
      std::string why = refused ? j.value("error", std::string()) : o.error;
      j = {{"host", o.host}, {"error", why.empty() ? "ezpz kill there exited " + std::to_string(o.exit_code) : why}};
      failed = true;
    } else {
      j["host"] = o.host;
      failed = failed || j.value("still_running", 0) > 0;
    }
    reports.push_back(j);
  }
  return failed;
}

int KillCommand::run(Context& ctx) {
  start_node_logging(log_level_, ctx.env.hostname);  // a node half of kill --all-nodes -v
  const auto sig = core::signal_from_string(signal_);
  if (!sig) {
    return ctx.term.fail(usage_error("--signal " + signal_ + " is not one of TERM, INT, HUP, QUIT, USR1, USR2, KILL"));
  }
  if (grace_s_ < 0) {
    return ctx.term.fail(usage_error("--grace must be >= 0 (got " + std::to_string(grace_s_) + ")"));
  }
  // The other nodes first: a bad hostfile stops the command before anything is signalled.
  std::optional<core::ReachPlan> reach;
  if (all_nodes_) {
    auto planned = core::plan_reach_spec(reach_, ctx.env, ctx.probe());
    if (!planned) {
      return ctx.term.fail(planned.error());
    }
    reach = std::move(*planned);
  }
  const std::string host = ctx.env.hostname.empty() ? "localhost" : ctx.env.hostname;
  // This node.
  const auto targets = core::select_kill_targets(ctx.processes().job_processes(), pattern_,
                                                 ctx.processes().self_and_ancestors(), ctx.env.uid, all_users_);
  log::info("kill: " + core::count_of(targets.size(), "process", "processes") + " of ezpz jobs here match" +
            (pattern_.empty() ? std::string() : " '" + pattern_ + "'") +
            (dry_run_ ? " (dry run: none signalled)" : ""));
  nlohmann::json procs = nlohmann::json::array();
  auto [escalated, survivors] = dry_run_ ? std::pair<std::vector<int>, int>{} : signal_here(ctx, targets, *sig);
  for (const auto& p : targets) {
    const bool killed = std::find(escalated.begin(), escalated.end(), p.pid) != escalated.end();
    procs.push_back({{"pid", p.pid}, {"job", p.job_id}, {"command", p.cmdline}, {"escalated", killed}});
  }
  nlohmann::json me = {{"host", host},        {"signal", core::signal_name(*sig)},
                       {"dry_run", dry_run_}, {"grace_s", grace_s_},
                       {"processes", procs},  {"still_running", survivors}};
  std::vector<nlohmann::json> reports = {me};
  bool failed = survivors > 0;
  // Every other node: the same command there.
  if (reach) {
    failed = other_nodes(ctx, *reach, reports) || failed;
  }
  print_reports(ctx, reports);
  // Nothing matched anywhere: exit 1, as pkill.
  const bool none = std::all_of(reports.begin(), reports.end(), [](const nlohmann::json& r) {
    return !r.contains("error") && r.value("processes", nlohmann::json::array()).empty();
  });
  return failed || none ? static_cast<int>(ExitCode::failure) : 0;
}

std::pair<std::vector<int>, int> KillCommand::signal_here(Context& ctx, const std::vector<core::ProcessInfo>& targets,
                                                          int sig) const {
  for (const auto& p : targets) {
    log::info("kill: " + core::signal_name(sig) + " to " + std::to_string(p.pid) + " (job " + p.job_id +
              "): " + p.cmdline);
    // A rank gets it from its shim, which tells the launch it was ezpz kill's (not a failure).
    if (p.shim == 0 || sig == SIGKILL || !ctx.processes().signal_shim(p.shim, sig)) {
      ctx.processes().send_signal(p.pid, sig);
    }
  }
  // Those still running after the grace period get SIGKILL.
  const bool escalate = sig != SIGKILL && grace_s_ > 0;
  const auto tenths = static_cast<long>(std::ceil(grace_s_ * 10));
  for (long waited = 0; escalate && waited < tenths; ++waited) {  // tenths of a second
    bool any = false;
    for (const auto& p : targets) {
      any = any || ctx.processes().alive(p.pid);
    }
    if (!any || !ctx.jobs().sleep_unless_interrupted(0.1)) {
      break;
    }
  }
  std::vector<int> escalated;
  for (const auto& p : targets) {
    if (escalate && ctx.processes().alive(p.pid)) {
      ctx.processes().send_signal(p.pid, SIGKILL);
      escalated.push_back(p.pid);
    }
  }
  auto killed = escalated;
  for (int waited = 0; !killed.empty() && waited < 20; ++waited) {  // SIGKILL takes a moment
    std::erase_if(killed, [&](int pid) { return !ctx.processes().alive(pid); });
    if (!killed.empty() && !ctx.jobs().sleep_unless_interrupted(0.05)) {
      break;
    }
  }
  int survivors = 0;
  for (const auto& p : targets) {
    survivors += ctx.processes().alive(p.pid) ? 1 : 0;
  }
  return {escalated, survivors};
}

void KillCommand::print_reports(Context& ctx, const std::vector<nlohmann::json>& reports) const {
  auto& out = ctx.term.out();
  for (const auto& r : reports) {
    if (json_) {
      ctx.term.print_json(r.dump());
      continue;
    }
    const std::string where = r.value("host", std::string());
    if (r.contains("error")) {
      out << where << ": " << r["error"].get<std::string>() << "\n";
      continue;
    }
    if (r["processes"].empty()) {
      out << where << ": no ezpz-launched processes" << (pattern_.empty() ? "" : " matching '" + pattern_ + "'")
          << "\n";
    }
    const auto sig = r["signal"].get<std::string>();
    char grace[32];
    std::snprintf(grace, sizeof(grace), "%g", r.value("grace_s", grace_s_));
    for (const auto& p : r["processes"]) {
      // A process that ignored the signal was killed: say so, not only what was sent first.
      const std::string sent = dry_run_                      ? "would send " + sig
                               : p.value("escalated", false) ? "sent " + sig + ", then SIGKILL after " + grace + " s,"
                                                             : "sent " + sig;
      out << where << ": " << sent << " to " << p["pid"].get<int>() << " (job " << p["job"].get<std::string>()
          << "): " << p["command"].get<std::string>() << "\n";
    }
    if (r.value("still_running", 0) > 0) {
      out << where << ": " << core::count_of(r["still_running"].get<int>(), "process", "processes")
          << " still running\n";
    }
  }
}

}  // namespace ezpz::cli
