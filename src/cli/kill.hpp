// ezpz kill [PATTERN] [--all-nodes] [--signal S] [--grace S] [--dry-run] [--json]: stop the
// processes of ezpz-launched jobs (every rank carries EZPZ_JOB_ID) on this node, or on every
// node of the job (over SSH or through the job's launcher: --transport); TERM first, KILL for those still running after
// the grace period.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "core/reach/reach.hpp"

namespace ezpz::cli {

class KillCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;

 private:
  bool other_nodes(Context& ctx, const core::ReachPlan& reach, std::vector<nlohmann::json>& reports) const;
  /// Signal this node's targets; those still running after --grace get SIGKILL. The pids that
  /// needed it, and how many are still running.
  std::pair<std::vector<int>, int> signal_here(Context& ctx, const std::vector<core::ProcessInfo>& targets,
                                               int sig) const;
  void print_reports(Context& ctx, const std::vector<nlohmann::json>& reports) const;
  std::string pattern_;
  bool all_nodes_ = false;
  core::ReachOptions reach_{"", "", false, true, ""};  ///< the hostfile's names: no -hsn0 look-ups
  std::string signal_ = "TERM";
  double grace_s_ = 3;
  bool dry_run_ = false;
  bool all_users_ = false;
  bool json_ = false;
  std::string log_level_;  ///< a node half: the head's -v
};

}  // namespace ezpz::cli
