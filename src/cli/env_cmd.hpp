// ezpz env [--shell bash|zsh|fish] [--json] [--hostfile FILE]: export lines for the current job
// (HOSTFILE, NHOSTS, NGPU_PER_HOST, NGPUS, MACHINE, EZPZ_LAUNCH, DIST_LAUNCH), so
// `eval "$(ezpz env)"` replaces ezpz's `ezpz_setup_job` shell helper.
#pragma once

#include <string>

#include "cli/command.hpp"

namespace ezpz::cli {

class EnvCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;

 private:
  std::string shell_;
  std::string hostfile_;
  std::string machine_;
  bool json_ = false;
};

}  // namespace ezpz::cli
