// ezpz __rank-env [--np N --ppn P ...] -- CMD: the hidden per-rank shim that launch
// inserts before the user's command. It sets torchrun's variables (RANK, WORLD_SIZE,
// LOCAL_RANK, ..., TORCHELASTIC_*, MASTER_ADDR, MASTER_PORT, and a GPU variable with
// --gpu-bind) from the launcher's variables, runs CMD as its child, and when CMD fails
// writes how it ended to the job's record directory (the launch's failure summary reads it).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "core/launch/rank_env.hpp"

namespace ezpz::cli {

/// The shim runs once per rank before every job, so main calls this first: it reads the
/// `--key=value` arguments launch writes without building the CLI tree. nullopt when the
/// arguments are not in that form (the full parser then handles them).
[[nodiscard]] std::optional<int> run_rank_env_fast(const std::vector<std::string>& args, Context& ctx);

class RankEnvCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;
  std::optional<int> run_raw(Context& ctx, const std::vector<std::string>& args) override {
    return run_rank_env_fast(args, ctx);
  }
  [[nodiscard]] bool takes_trailing_command() const override { return true; }
  void set_trailing_command(std::vector<std::string> command, bool had_separator) override;

 private:
  core::RankContext rank_;
  std::string gpu_bind_ = "none";
  std::string restart_ = "0/0";
  std::vector<std::string> command_;
};

}  // namespace ezpz::cli
