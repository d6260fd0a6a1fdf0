// ezpz test [SIZE FLAGS] [TRAINING FLAGS]: a real distributed smoke run. Launches the companion
// program ezpz-test-train (built with libezpz_torch) on every rank through `ezpz launch`'s
// planning and supervision, so it runs wherever launch does (PBS, Slurm, local).
#pragma once

#include <string>
#include <vector>

#include "cli/command.hpp"
#include "core/launch_plan.hpp"

namespace ezpz::cli {

class TestCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;
  /// -np/-ppn/-nh like launch.
  void normalize(std::vector<std::string>& tokens, bool had_separator) override;

  /// The launch request for `program` (tests read it).
  [[nodiscard]] core::LaunchRequest request(const std::string& program, const std::string& json_out) const;
  /// The companion program: --program, EZPZ_TORCH_TRAIN, next to ezpz, the build tree, PATH.
  [[nodiscard]] static Expected<std::string> find_program(const Context& ctx, const std::string& given);

 private:
  CLI::App* app_ = nullptr;
  int nprocs_ = 0;
  int ppn_ = 0;
  int nhosts_ = 0;
  std::string hostfile_, machine_, launcher_, cpu_bind_, gpu_bind_, program_;
  int train_iters_ = 200;
  int batch_size_ = 128;
  std::string dtype_ = "auto";
  int tp_ = 1;
  int pp_ = 1;
  int cp_ = 1;
  int print_freq_ = 10;
  long long seed_ = 1337;
  std::string outdir_ = "outputs/ezpz-test";
  double timeout_s_ = 0;
  bool json_ = false;
  bool dry_run_ = false;
};

}  // namespace ezpz::cli
