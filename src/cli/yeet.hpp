// ezpz yeet [SRC] [--src PATH] [--dst PATH] [--copy|--compress] [--dry-run] [--json]:
// copy an env, directory or tarball to node-local storage and patch a venv for its new home.
#pragma once

#include <string>

#include "cli/command.hpp"
#include "cli/yeet_steps.hpp"
#include "core/job/machine.hpp"
#include "core/reach/reach.hpp"
#include "core/yeet/node_plan.hpp"
#include "core/yeet/plan.hpp"

namespace ezpz::cli {

class YeetCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;

 private:
  [[nodiscard]] Expected<core::YeetRequest> request() const;
  [[nodiscard]] Expected<core::BroadcastPlan> plan_nodes(Context& ctx, const core::YeetPlan& plan,
                                                         const std::string& host) const;
  [[nodiscard]] Expected<std::pair<core::YeetPlan, core::SourceFacts>> plan_here(
      Context& ctx, const core::YeetSettings& settings) const;
  [[nodiscard]] Expected<YeetRun> plan(Context& ctx) const;
  [[nodiscard]] int where(Context& ctx) const;
  void find_base(YeetRun& run) const;
  [[nodiscard]] int finish(YeetRun& run) const;

  std::string positional_;
  std::string src_;
  std::string dst_;
  bool copy_ = false;
  bool compress_ = false;
  bool include_pycache_ = false;
  bool force_ = false;
  bool dry_run_ = false;
  bool where_ = false;
  bool json_ = false;
  core::ReachOptions reach_;  ///< --hostfile, --transport, --ssh-command, --accept-new-host-keys, --no-hsn
  int stream_level_ = 0;      ///< 0: adaptive
  bool no_reattach_ = false;
  bool full_ = false;
  unsigned long long max_bytes_ = 0;
  double stall_timeout_s_ = 30;
  int fanout_ = 2;
  std::string strategy_ = "tree";
  bool no_encrypt_ = false;
  int min_success_nodes_ = 0;
  double min_success_fraction_ = 0;
  CLI::App* app_ = nullptr;
};

}  // namespace ezpz::cli
