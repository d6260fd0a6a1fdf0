#include "cli/rank_env.hpp"

#include <charconv>

#include <CLI/App.hpp>

#include "cli/terminal.hpp"
#include "core/failure.hpp"

namespace ezpz::cli {
namespace {

/// Where a failed rank's report goes; false when it could not be written there.
bool report_failure(Context& ctx, const core::RankContext& rank, const core::RankInfo& info,
                    const std::vector<std::string>& command, const core::ChildExit& exit) {
  if (rank.record_dir.empty()) {
    return false;
  }
  core::RankExit report{info.rank,       info.local_rank, ctx.env.hostname, exit.exit_code, exit.signal,
                        exit.exec_errno, command.front(), exit.end_time,    exit.pid};
  return static_cast<bool>(
      ctx.probe().write_file(core::exit_report_path(rank.record_dir, info.rank), core::exit_report_json(report)));
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
  // 2. Run the command as our child, labelled when asked.
  const std::string label = rank.label ? "[" + std::to_string(info->rank) + "] " : "";
  auto exit = ctx.jobs().run_child(command, core::rank_environment(ctx.env, rank, *info), label);
  // 3. A failure is reported to the launch (one summary); where it cannot be, it is said here.
  if (exit.exit_code != 0 && !report_failure(ctx, rank, *info, command, exit) && exit.exec_errno != 0) {
    core::RankExit e;
    e.exec_errno = exit.exec_errno;
    e.program = command.front();
    ctx.term.error(core::describe_exit(e));
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
  app.add_flag("--label", rank_.label, "Prefix each output line with [rank]");
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
