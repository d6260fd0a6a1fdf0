#include "cli/launch_report.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/terminal.hpp"
#include "cli/version.hpp"
#include "core/base/shell.hpp"

namespace ezpz::cli {
namespace {

nlohmann::json env_object(const core::EnvList& env) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : env) {
    out[name] = value;
  }
  return out;
}

nlohmann::json optional_string(const std::string& s) {
  return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
}

nlohmann::json plan_object(const core::LaunchPlan& plan, const core::ClusterInfo& cluster) {
  return {
      {"scheduler", core::to_string(plan.scheduler)},
      {"machine", plan.machine},
      {"machine_evidence", cluster.machine_reason},
      {"hosts", plan.hosts},
      {"spare_hosts", plan.spare_hosts},
      {"nhosts", plan.topology.nhosts},
      {"ppn", plan.topology.ppn},
      {"nprocs", plan.topology.nprocs},
      {"gpus_per_node", cluster.gpus.per_node},
      {"gpus_source", cluster.gpus.source},
      {"ppn_limit", plan.ppn_limit.value > 0 ? nlohmann::json(plan.ppn_limit.value) : nlohmann::json(nullptr)},
      {"ppn_limit_source", optional_string(plan.ppn_limit.source)},
      {"host_source", cluster.host_source.origin},
      {"hostfile", optional_string(plan.hostfile)},
      {"launcher", plan.launcher},
      {"style", core::to_string(plan.style)},
      {"cpu_bind", optional_string(plan.cpu_bind)},
      {"argv", plan.argv},
      {"env", env_object(plan.env)},
      {"unset_env", plan.unset_env},
      {"rank_env", plan.rank_env},
      {"master_addr", optional_string(plan.rank.master_addr)},
      {"master_port", plan.rank.master_port > 0 ? nlohmann::json(plan.rank.master_port) : nlohmann::json(nullptr)},
      {"gpu_bind", core::to_string(plan.rank.gpu_bind)},
      {"label", plan.label},
      {"warnings", plan.warnings},
      {"notes", plan.notes},
  };
}

nlohmann::json failure_object(const core::FirstFailure& f) {
  const auto& e = f.exit;
  return {
      {"rank", e.rank},
      {"host", e.host},
      {"exit_code", e.exit_code},
      {"signal", e.signal > 0 ? nlohmann::json(e.signal) : nlohmann::json(nullptr)},
      {"not_found", e.exec_errno == ENOENT},
      {"seconds", f.seconds},
      {"failed_ranks", f.failed_ranks},
      {"what", core::describe_exit(e)},
      {"last_lines", e.last_lines},
      {"error", f.error ? nlohmann::json(f.error->message) : nlohmann::json(nullptr)},
      {"traceback",
       f.error && !f.error->traceback.empty() ? nlohmann::json(f.error->traceback) : nlohmann::json(nullptr)},
      {"error_file", optional_string(f.error_file)},
  };
}

/// The shims' reports of one attempt (exit-RANK.json).
std::vector<core::RankExit> shim_reports(const core::SystemProbe& probe, const std::string& dir) {
  std::vector<core::RankExit> out;
  for (const auto& name : probe.list_dir(dir)) {
    if (name.rfind("exit-", 0) != 0 || name.size() < 10 || name.substr(name.size() - 5) != ".json") {
      continue;
    }
    if (auto text = probe.read_file(dir + "/" + name)) {
      if (auto report = core::parse_exit_report(*text)) {
        out.push_back(std::move(*report));
      }
    }
  }
  return out;
}

/// The failed ranks: as the hub heard them, and from the reports of shims that could not reach it.
std::vector<core::RankExit> failed_exits(const std::vector<core::RankExit>& heard,
                                         const std::vector<core::RankExit>& reported) {
  std::vector<core::RankExit> out;
  std::set<int> known;
  for (const auto& e : heard) {
    known.insert(e.rank);
    if (e.exit_code != 0) {
      out.push_back(e);
    }
  }
  for (const auto& e : reported) {
    if (known.count(e.rank) == 0) {
      out.push_back(e);
    }
  }
  return out;
}

}  // namespace

void add_rank_hosts(nlohmann::ordered_json& record, const core::LaunchPlan& plan,
                    const std::vector<AttemptFacts>& facts) {
  auto attempts = nlohmann::ordered_json::array();
  for (const auto& f : facts) {
    std::vector<std::string> hosts(static_cast<std::size_t>(std::max(plan.topology.nprocs, 0)));
    for (const auto& r : f.ranks) {
      if (r.rank >= 0 && static_cast<std::size_t>(r.rank) < hosts.size()) {
        hosts[static_cast<std::size_t>(r.rank)] = r.host;
      }
    }
    attempts.push_back(hosts);
  }
  record["rank_hosts"] = attempts;
}

std::optional<core::FirstFailure> find_first_failure(Context& ctx, const core::LaunchPlan& plan,
                                                     const core::RunResult& result, double started,
                                                     const AttemptFacts& facts) {
  const auto& dir = plan.rank.record_dir;
  std::vector<core::RankExit> exits;
  if (plan.style == core::LauncherStyle::local) {
    if (result.failed >= 0) {
      core::RankExit e;
      e.rank = e.local_rank = result.failed;
      e.host = plan.hosts.empty() ? ctx.env.hostname : plan.hosts.front();
      e.exit_code = result.failed_code;
      e.signal = result.failed_signal;
      e.program = plan.argv.empty() ? "" : plan.argv.front();
      e.time = result.failed_time;
      e.last_lines = result.failed_tail;
      exits.push_back(std::move(e));
    }
  } else {
    exits = failed_exits(facts.exits, dir.empty() ? std::vector<core::RankExit>{} : shim_reports(ctx.probe(), dir));
  }
  auto first = core::first_failure(exits, started);
  if (first && !plan.rank.log_dir.empty()) {  // where the shims (or the built-in launcher) wrote it all
    const bool local = plan.style == core::LauncherStyle::local;
    const auto host =
        local ? (ctx.env.hostname.empty() ? std::string("localhost") : ctx.env.hostname) : first->exit.host;
    first->output_file = core::rank_log_path(plan.rank.log_dir, first->exit.rank, host, 2);
  }
  if (first && !dir.empty()) {
    const auto path = core::error_file_path(dir, first->exit.rank);
    if (auto text = ctx.probe().is_file(path) ? ctx.probe().read_file(path) : Expected<std::string>(failure("none"))) {
      first->error = core::parse_error_file(*text);
      first->error_file = first->error ? path : "";
    }
  }
  return first;
}

std::string report_failure(Context& ctx, const core::LaunchPlan& plan, const core::RunResult& result,
                           const std::optional<core::FirstFailure>& failure, double started, int attempt) {
  std::vector<std::string> lines;
  if (!result.blocked.empty()) {
    lines = {result.blocked + ": check that node (ezpz doctor --nodes)" +
             (plan.spare_hosts.empty() ? ", or leave it out of the job (--spare-nodes N swaps in a spare)" : "")};
  } else if (result.not_started) {
    lines = {"no rank started within " + std::to_string(static_cast<long>(plan.start_timeout_s)) + " s of " +
             plan.launcher + "'s start (why, above)"};
  } else if (!failure) {
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    lines = {plan.launcher + " exited with code " + std::to_string(result.exit_code) + " " +
             std::to_string(static_cast<long>(now - started)) + " s after the start; " +
             (plan.rank_env ? "no rank reported a failure (see the launcher's messages above)"
                            : "with --no-rank-env ezpz cannot tell which rank failed")};
  } else {
    lines = core::failure_summary(*failure);
    lines.front().erase(0, std::string_view("job failed: ").size());
    if (const auto note = core::launcher_death_note(plan.launcher, result, failure); !note.empty()) {
      lines.push_back("  " + note);
    }
  }
  if (attempt > 0) {
    ctx.term.warn("attempt " + std::to_string(attempt) + " failed: " + lines.front());
  } else {
    ctx.term.error("job failed: " + lines.front());
  }
  for (std::size_t i = 1; i < lines.size(); ++i) {
    ctx.term.err() << lines[i] << '\n';
  }
  return lines.front();
}

std::string dry_run_line(const core::LaunchPlan& plan, bool folded) {
  if (plan.style != core::LauncherStyle::local) {
    const auto shim = std::find(plan.argv.begin(), plan.argv.end(), "__rank-env");
    const auto command = std::find(shim, plan.argv.end(), "--");
    if (!folded || shim == plan.argv.end() || shim == plan.argv.begin() || command == plan.argv.end()) {
      return core::shell_command_line(plan.env, plan.argv);
    }
    // The launcher's part; the shim (its binary, __rank-env and its settings); the command.
    return core::shell_command_line(plan.env, {plan.argv.begin(), shim - 1}) + " \\\n  " +
           core::shell_join({shim - 1, command}) + " \\\n  " + core::shell_join({command, plan.argv.end()});
  }
  std::vector<std::string> line = {
      "ezpz", "launch", "--launcher", "local", "--np=" + std::to_string(plan.topology.nprocs), "--"};
  line.insert(line.end(), plan.argv.begin(), plan.argv.end());
  return core::shell_command_line(plan.env, line);
}

std::string plan_json(const core::LaunchPlan& plan, const core::ClusterInfo& cluster, const core::Env& env) {
  auto j = plan_object(plan, cluster);
  j["ok"] = true;
  // What rank 0 gets (torchrun's whole set): the shim derives the same on every rank.
  j["rank0_env"] = plan.rank_env ? env_object(core::rank_environment(env, plan.rank, core::planned_rank(0, plan.rank)))
                                 : nlohmann::json::object();
  return j.dump();
}

std::string rank_env_report(const core::LaunchPlan& plan, const core::Env& env, Format format) {
  const bool json = format == Format::json;
  nlohmann::json ranks = nlohmann::json::array();
  std::string text;
  for (int r = 0; r < plan.topology.nprocs; ++r) {
    const auto info = core::planned_rank(r, plan.rank);
    const auto& host = plan.hosts.at(static_cast<std::size_t>(info.node_rank) % plan.hosts.size());
    core::EnvList vars = plan.rank_env ? core::rank_environment(env, plan.rank, info) : core::EnvList{};
    if (json) {
      ranks.push_back({{"rank", r}, {"host", host}, {"env", env_object(vars)}});
      continue;
    }
    text += "rank " + std::to_string(r) + " on " + host + ":";
    for (const auto& [name, value] : vars) {
      text += " " + name + "=" + value;
    }
    text += '\n';
  }
  return json ? ranks.dump() : text;
}

nlohmann::ordered_json record_object(const core::LaunchPlan& plan, const core::ClusterInfo& cluster,
                                     const std::vector<std::string>& command, const LaunchTimes& times,
                                     const core::RunResult& result, int attempts,
                                     const std::optional<core::FirstFailure>& failure) {
  nlohmann::json record = {
      {"ezpz_version", version_number()},
      {"command", command},
      {"plan", plan_object(plan, cluster)},
      {"start", times.start_iso},
      {"end", times.end_iso},
      {"duration_s", times.duration_s},
      {"exit_code", result.exit_code},
      {"attempts", attempts},
      {"timed_out", result.timed_out},
      {"signal", result.signal},
      // the signal that killed the launcher itself (0: it exited), e.g. 13 when MPICH's mpiexec
      // died of SIGPIPE after a rank failed and exit_code is that rank's
      {"launcher_signal", plan.style == core::LauncherStyle::local ? 0 : result.failed_signal},
      // why ezpz stopped a launcher that could not reach a node (null: it did not)
      {"launcher_blocked", result.blocked.empty() ? nlohmann::json(nullptr) : nlohmann::json(result.blocked)},
      // no rank started within --start-timeout: ezpz stopped the launcher
      {"not_started", result.not_started},
      {"failed_rank", failure ? nlohmann::json(failure->exit.rank) : nlohmann::json(nullptr)},
      {"first_failure", failure ? failure_object(*failure) : nlohmann::json(nullptr)},
  };
  return record;  // its keys in name order, as nlohmann::json keeps them
}

}  // namespace ezpz::cli
