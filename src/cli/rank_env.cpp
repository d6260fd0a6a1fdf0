#include "cli/rank_env.hpp"

#include <charconv>

#include <CLI/App.hpp>

#include "cli/terminal.hpp"

namespace ezpz::cli {
namespace {

int exec_with_rank_env(Context& ctx, core::RankContext rank, const std::string& gpu_bind,
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
  auto error = ctx.process.exec_replace(command, core::rank_environment(ctx.env, rank, *info));
  ctx.term.error(error.message);
  return static_cast<int>(error.code);
}

bool parse_int(std::string_view s, int& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

std::optional<int> run_rank_env_fast(const std::vector<std::string>& args, Context& ctx) {
  core::RankContext rank;
  std::string gpu_bind = "none";
  std::size_t i = 1;  // args[0] is "__rank-env"
  for (; i < args.size() && args[i] != "--"; ++i) {
    std::string_view a = args[i];
    if (a == "--gpu-reverse") {
      rank.gpu_reverse = true;
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
  return exec_with_rank_env(ctx, rank, gpu_bind,
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
}

void RankEnvCommand::set_trailing_command(std::vector<std::string> command, bool /*had_separator*/) {
  command_ = std::move(command);
}

int RankEnvCommand::run(Context& ctx) {
  return exec_with_rank_env(ctx, rank_, gpu_bind_, command_);
}

}  // namespace ezpz::cli
