// ezpz test [SIZE FLAGS] [TRAINING FLAGS]: a real distributed smoke run on every rank through
// `ezpz launch`'s planning and supervision, so it runs wherever launch does (PBS, Slurm, local).
// Two engines train the same model and report the same way: the C++ companion program
// ezpz-test-train (built with libezpz_torch), or a Python script carried in this binary and run
// with the job's own python3 and torch (the default where no companion is installed).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli/command.hpp"
#include "core/launch/launch_plan.hpp"

namespace ezpz::cli {

/// The Python engine's script (src/cli/test_train.py, generated into the build).
[[nodiscard]] std::string_view test_train_py();

/// What runs on every rank: which engine, and the argv before the training flags.
struct TestEngine {
  std::string name;  ///< "cpp" or "python"
  std::vector<std::string> argv;
  std::string about;  ///< for the start line: the program, or the python and its torch
};

class TestCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;
  /// -np/-ppn/-nh like launch.
  void normalize(std::vector<std::string>& tokens, bool had_separator) override;

  /// The launch request for the engine's argv (tests read it).
  [[nodiscard]] core::LaunchRequest request(const std::vector<std::string>& engine, const std::string& json_out) const;
  /// The companion program: --program, EZPZ_TORCH_TRAIN, next to ezpz, the build tree, PATH,
  /// ~/.local/bin (where scripts/build-companion.sh installs it).
  [[nodiscard]] static Expected<std::string> find_program(const Context& ctx, const std::string& given);

 private:
  CLI::App* app_ = nullptr;
  int nprocs_ = 0;
  int ppn_ = 0;
  int nhosts_ = 0;
  [[nodiscard]] Expected<TestEngine> pick_engine(const Context& ctx, const std::string& outdir) const;
  [[nodiscard]] Expected<TestEngine> python_engine(const Context& ctx, const std::string& outdir) const;

  std::string hostfile_, machine_, launcher_, cpu_bind_, gpu_bind_, program_;
  std::string engine_ = "auto";
  std::string python_;
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
