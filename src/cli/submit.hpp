// ezpz submit [OPTIONS] -- COMMAND...: write a PBS or Slurm batch script whose body runs
// `ezpz launch -- COMMAND`, and with --submit hand it to qsub or sbatch.
#pragma once

#include <string>
#include <vector>

#include "cli/command.hpp"
#include "core/job/job_env.hpp"

namespace ezpz::cli {

class SubmitCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;
  /// The machine's directives, then --sched-arg's; the machine's filesystems unless --filesystems.
  [[nodiscard]] Expected<void> add_sched_args(Context& ctx, core::SubmitSpec& spec) const;
  /// A program or script the command names that the job will not find: refused, or with
  /// --force a warning.
  [[nodiscard]] Expected<void> check_command(Context& ctx, const std::string& workdir) const;
  [[nodiscard]] bool takes_trailing_command() const override { return true; }
  void set_trailing_command(std::vector<std::string> command, bool had_separator) override;

 private:
  int nodes_ = 1;
  int spare_nodes_ = 0;
  std::string walltime_ = "01:00:00";
  std::string queue_;
  std::string account_;
  std::string filesystems_ = "home";
  std::string job_name_ = "ezpz";
  std::string scheduler_;
  std::vector<std::string> env_;
  std::string output_;
  std::vector<std::string> launch_args_;
  std::vector<std::string> sched_args_;
  std::string exclude_from_;
  bool force_ = false;
  CLI::App* app_ = nullptr;
  bool submit_ = false;
  bool dry_run_ = false;
  std::vector<std::string> command_;
  std::string yeet_;     ///< --yeet [SRC]: "" with the flag alone (the active env)
  std::string machine_;  ///< --machine
  /// --yeet's source and destination in `spec`: the named one, else the active env.
  [[nodiscard]] Expected<void> plan_yeet_step(Context& ctx, core::SubmitSpec& spec) const;
};

}  // namespace ezpz::cli
