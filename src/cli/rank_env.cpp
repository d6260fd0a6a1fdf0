#include "cli/rank_env.hpp"

#include <CLI/App.hpp>

#include "cli/terminal.hpp"

namespace ezpz::cli {

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
  if (command_.empty()) {
    ctx.term.error("__rank-env needs a command after --");
    return static_cast<int>(ExitCode::usage);
  }
  auto bind = core::gpu_bind_from_string(gpu_bind_);
  if (!bind) {
    ctx.term.error("--gpu-bind " + gpu_bind_ + " is not cuda, ze, rocr or none");
    return static_cast<int>(ExitCode::usage);
  }
  rank_.gpu_bind = *bind;
  auto info = core::detect_rank(ctx.env, rank_);
  if (!info) {
    ctx.term.error(info.error().message);
    return static_cast<int>(info.error().code);
  }
  auto error = ctx.process.exec_replace(command_, core::rank_environment(ctx.env, rank_, *info));
  ctx.term.error(error.message);
  return static_cast<int>(error.code);
}

}  // namespace ezpz::cli
