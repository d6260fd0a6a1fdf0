#include "cli/rank_env.hpp"

#include <charconv>

#include <CLI/App.hpp>

#include "cli/terminal.hpp"
#include "core/base/log.hpp"
#include "core/launch/failure.hpp"
#include "core/launch/rank_output.hpp"

namespace ezpz::cli {
namespace {

/// Where a failed rank's report goes; false when it could not be written there.
bool report_failure(Context& ctx, const core::RankContext& rank, const core::RankExit& report) {
  if (rank.record_dir.empty()) {
    return false;
  }
  return static_cast<bool>(
      ctx.probe().write_file(core::exit_report_path(rank.record_dir, report.rank), core::exit_report_json(report)));
}

/// Where the rank's output goes: the launch's rank hub when it can be reached (else here, in
/// whole lines), its files in the log directory, the console only for the ranks it shows.
core::ChildIo rank_io(Context& ctx, const core::RankContext& rank, const core::RankInfo& info,
                      std::unique_ptr<core::RankLink>& link) {
  core::ChildIo io;
  const auto& host = ctx.env.hostname;
  // The hub is dialled now and reached once the command runs: its answer comes while the
  // command starts (on a busy node the hub's wake is most of a short rank's life).
  std::string why;
  std::shared_ptr<core::PendingRankLink> pending = ctx.ranks().begin_hub(ctx.env, info.rank, host, why);
  io.connect = [&ctx, &link, pending, why, host, r = info.rank, local = info.local_rank]() mutable -> core::RankLink* {
    if (pending) {
      link = pending->finish(10000, why);
      pending.reset();
    }
    if (!link && !why.empty() && local == 0) {  // once a node
      ctx.term.warn("rank " + std::to_string(r) + " on " + host + ": cannot reach the launch's rank hub (" + why +
                    "): the lines of this node's ranks come through the launcher, which alone can stop them");
    } else if (!link && !why.empty()) {  // each of the others with EZPZ_LOG_LEVEL=info
      log::info("rank " + std::to_string(r) + " on " + host + ": cannot reach the launch's rank hub (" + why + ")");
    }
    why.clear();  // said once
    return link.get();
  };
  io.label = rank.label ? core::rank_label(host, info.rank) : "";
  auto console = core::parse_rank_ranges(rank.console, "--console-ranks");
  io.console = rank.console.empty() || (console && core::in_ranges(*console, info.rank));
  // (the record directory, made already, by default: on a shared file system each mkdir is a
  // metadata round trip, one per rank)
  if (!rank.log_dir.empty() && (rank.log_dir == rank.record_dir || ctx.probe().make_dirs(rank.log_dir))) {
    io.log_out = core::rank_log_path(rank.log_dir, info.rank, host, 1);
    io.log_err = core::rank_log_path(rank.log_dir, info.rank, host, 2);
  }
  return io;
}

int run_with_rank_env(Context& ctx, core::RankContext rank, const std::string& gpu_bind,
                      const std::vector<std::string>& command) {
  if (command.empty()) {
    ctx.term.error("__rank-env needs a command after --");
    return static_cast<int>(ExitCode::usage);
  }
  auto bind = core::gpu_bind_from_string(gpu_bind);
  if (!bind) {
    ctx.term.error("--gpu-bind " + gpu_bind + " is not cuda, ze, rocr or none");
    return static_cast<int>(ExitCode::usage);
  }
  rank.gpu_bind = *bind;
  auto info = core::detect_rank(ctx.env, rank);
  if (!info) {
    ctx.term.error(info.error().message);
    return static_cast<int>(info.error().code);
  }
  // 1. torch's @record writes into the record directory: it must exist on this node.
  if (!rank.record_dir.empty() && !ctx.probe().make_dirs(rank.record_dir)) {
    rank.record_dir.clear();
  }
  // 2. Run the command as our child, its output to the launch's hub (or here), the hub's
  //    variables not passed on (a launch inside the rank has its own).
  std::unique_ptr<core::RankLink> link;
  const auto io = rank_io(ctx, rank, *info, link);
  auto exit = ctx.jobs().run_child(command, core::rank_environment(ctx.env, rank, *info),
                                   {std::string(core::kHubVar), std::string(core::kHubKeyVar)}, io);
  // 3. How it ended goes to the hub, and a failure to the record (one summary); where neither
  //    can take it, it is said here.
  core::RankExit report{info->rank,  info->local_rank, ctx.env.hostname, exit.exit_code,
                        exit.signal, exit.exec_errno,  command.front(),  exit.end_time,
                        exit.pid,    exit.last_lines,  exit.kill_signal};
  if (!link && exit.exec_errno != 0 && io.connect) {
    (void)io.connect();  // it never ran: the hub hears why all the same
  }
  const bool told = link && link->send_exit(report);
  if (told) {
    // Where ezpz stops the job rank by rank, this shim ends once the hub has its report, and
    // after a stop once every rank has (a launcher that kills them all as soon as one ends,
    // Open MPI's, would cut the others' handlers short). Elsewhere, and for a rank that ended
    // well and heard no stop: at once.
    link->await_release(link->kill_after() + 5, exit.exit_code == 0 && exit.signal == 0);
  }
  const bool recorded = exit.exit_code != 0 && report_failure(ctx, rank, report);
  if (exit.exit_code != 0 && !told && !recorded && exit.exec_errno != 0) {
    ctx.term.error(core::describe_exit(report));
  }
  // 4. End as the command ended; under Hydra a death by a signal as its code (128+N), which the
  //    hub has heard: Hydra SIGKILLs every other rank at once when one is killed by a signal,
  //    their TERM handlers cut short and their last output unread.
  if (exit.signal > 0 && core::launcher_kills_all_on_signal(ctx.env)) {
    exit.signal = 0;
  }
  return ctx.jobs().finish_like(exit);
}

bool parse_int(std::string_view s, int& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

bool parse_restart(std::string_view s, core::RankContext& rank) {
  auto slash = s.find('/');
  if (slash == std::string_view::npos) {
    return false;
  }
  return parse_int(s.substr(0, slash), rank.restart_count) && parse_int(s.substr(slash + 1), rank.max_restarts);
}

}  // namespace

std::optional<int> run_rank_env_fast(const std::vector<std::string>& args, Context& ctx) {
  core::RankContext rank;
  std::string gpu_bind = "none";
  std::size_t i = 0;  // the arguments after "__rank-env"
  for (; i < args.size() && args[i] != "--"; ++i) {
    std::string_view a = args[i];
    if (a == "--gpu-reverse" || a == "--label") {
      (a == "--label" ? rank.label : rank.gpu_reverse) = true;
      continue;
    }
    auto eq = a.find('=');
    if (eq == std::string_view::npos) {
      return std::nullopt;
    }
    auto key = a.substr(0, eq);
    auto value = a.substr(eq + 1);
    bool ok = true;
    if (key == "--np") {
      ok = parse_int(value, rank.nprocs);
    } else if (key == "--ppn") {
      ok = parse_int(value, rank.ppn);
    } else if (key == "--nhosts") {
      ok = parse_int(value, rank.nhosts);
    } else if (key == "--master-port") {
      ok = parse_int(value, rank.master_port);
    } else if (key == "--gpus") {
      ok = parse_int(value, rank.gpus_per_node);
    } else if (key == "--master-addr") {
      rank.master_addr = value;
    } else if (key == "--gpu-bind") {
      gpu_bind = value;
    } else if (key == "--run-id") {
      rank.run_id = value;
    } else if (key == "--record-dir") {
      rank.record_dir = value;
    } else if (key == "--restart") {
      ok = parse_restart(value, rank);
    } else if (key == "--log-dir") {
      rank.log_dir = value;
    } else if (key == "--console-ranks") {
      rank.console = value;
    } else {
      ok = false;
    }
    if (!ok) {
      return std::nullopt;
    }
  }
  if (i == args.size()) {
    return std::nullopt;
  }
  return run_with_rank_env(ctx, rank, gpu_bind,
                           std::vector<std::string>(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end()));
}

void RankEnvCommand::add_cli(CLI::App& app) {
  app.add_option("--np", rank_.nprocs, "World size the launch planned");
  app.add_option("--ppn", rank_.ppn, "Processes per host the launch planned");
  app.add_option("--nhosts", rank_.nhosts, "Hosts the launch planned");
  app.add_option("--master-addr", rank_.master_addr, "MASTER_ADDR unless already set");
  app.add_option("--master-port", rank_.master_port, "MASTER_PORT unless already set");
  app.add_option("--gpu-bind", gpu_bind_, "cuda, ze, rocr or none");
  app.add_option("--gpus", rank_.gpus_per_node, "GPUs per node");
  app.add_flag("--gpu-reverse", rank_.gpu_reverse, "Local rank 0 takes the last GPU");
  app.add_option("--run-id", rank_.run_id, "TORCHELASTIC_RUN_ID unless already set");
  app.add_option("--record-dir", rank_.record_dir, "Where error files and failure reports go");
  app.add_option("--restart", restart_, "K/M: attempt K of --retries M");
  app.add_flag("--label", rank_.label, "Prefix each output line with [host rank]");
  app.add_option("--log-dir", rank_.log_dir, "Where this rank's output files go");
  app.add_option("--console-ranks", rank_.console, "The ranks whose lines show (all when not given)");
}

void RankEnvCommand::set_trailing_command(std::vector<std::string> command, bool /*had_separator*/) {
  command_ = std::move(command);
}

int RankEnvCommand::run(Context& ctx) {
  if (!parse_restart(restart_, rank_)) {
    ctx.term.error("--restart " + restart_ + " is not K/M");
    return static_cast<int>(ExitCode::usage);
  }
  return run_with_rank_env(ctx, rank_, gpu_bind_, command_);
}

}  // namespace ezpz::cli
