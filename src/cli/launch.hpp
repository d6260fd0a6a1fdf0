// ezpz launch [OPTIONS] [--] CMD...
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/command.hpp"
#include "core/launch/failover.hpp"
#include "core/launch/failure.hpp"
#include "core/launch/launch_plan.hpp"
#include "core/reach/reach.hpp"

namespace ezpz::cli {

/// A planned job: the plan and the cluster it was planned for; with failover, the split of its
/// nodes and what each attempt is planned again from.
struct PlannedJob {
  core::LaunchPlan plan;
  core::ClusterInfo cluster;
  std::optional<core::NodeSplit> split;
  core::LaunchRequest request;
  core::LauncherInventory inventory;
};
/// What `ezpz launch` does before running anything: machine profiles, scheduler and hosts,
/// a MASTER_PORT, the plan. `ezpz test` plans its companion program the same way.
/// With a `timestamp` (20261122T003418), ranks get the job id as TORCHELASTIC_RUN_ID and the
/// launch's record directory for their error files and failure reports.
/// With a `timestamp`, the job gets its run id, and (when `record`) a record directory.
/// With `failover` on, the plan runs on the active nodes only (plan_failover).
[[nodiscard]] Expected<PlannedJob> plan_job(Context& ctx, core::LaunchRequest request, std::string_view timestamp = {},
                                            bool record = true, core::Lookups lookups = core::Lookups::network,
                                            const core::FailoverRequest* failover = nullptr);
/// The job's nodes split into active and spare ones, the first attempt planned on the active.
[[nodiscard]] Expected<PlannedJob> plan_failover(Context& ctx, PlannedJob job, const core::FailoverRequest& failover);
/// Where attempt `k`'s hostfile goes: the record directory, else $TMPDIR (or /tmp).
[[nodiscard]] std::string failover_hostfile(const core::LaunchRequest& request, const core::Env& env, int k);

/// What one attempt left beside its result: what the ranks said of themselves (through the
/// rank hub under a launcher; the built-in launcher knows it first hand).
struct AttemptFacts {
  bool hub = false;                    ///< the ranks' shims reported to the hub
  std::vector<core::RankExit> exits;   ///< how each rank that reported its end ended
  std::vector<core::RankWatch> ranks;  ///< every rank: its host, its end, its last line
  // Failover (--spare-nodes): the attempt's nodes and the verdict on it.
  core::HostList hosts;
  std::string verdict;  ///< "success", "bad_nodes", "application", "walltime", "interrupted"
  std::vector<core::Eviction> evicted;
  std::vector<core::ProbeResult> probes;
  core::FailureSign sign;         ///< what the last words said (storage, systemic)
  double started = 0, ended = 0;  ///< the attempt's run (epoch seconds)
};

/// How run_plan supervises a job.
struct SupervisionOptions {
  double timeout_s = 0;     ///< watchdog: no output for this long -> stop (0 = off)
  double time_limit_s = 0;  ///< wall clock: running this long -> stop (0 = off)
  double kill_after_s = 10;
  bool keep_going = false;        ///< built-in launcher: a failing rank does not stop the others
  std::function<void()> started;  ///< once the processes run (work that must not delay their start)
};
/// Run the plan once (all ranks with the built-in launcher, or the launcher program with the
/// rank hub beside it); what the ranks said goes to `facts` when given.
[[nodiscard]] Expected<core::RunResult> run_plan(Context& ctx, const core::LaunchPlan& plan,
                                                 const SupervisionOptions& options, AttemptFacts* facts = nullptr);

/// Delays before retry k (0-based): base, 2 base, 4 base, ... capped at 60 s (5, 10, 20, 40, 60).
[[nodiscard]] double retry_delay(int k, double base);

/// Whether the job outlives a node's failure, as its scheduler says (Slurm's --no-kill, PBS's
/// tolerate_node_failures): a warning with the fix when it does not, a caution when it cannot be
/// told (launch_failover.cpp).
void check_node_failure_policy(Context& ctx);

class LaunchCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;
  /// Run the plan once (all ranks, or the launcher) under supervision.
  Expected<core::RunResult> run_once(Context& ctx, const core::LaunchPlan& plan, AttemptFacts& facts);
  /// --print-env or --dry-run: the plan as text or JSON on stdout.
  void show_plan(Context& ctx, const core::LaunchPlan& plan, const core::ClusterInfo& cluster) const;
  /// Run the plan, again after failures up to --retries; the last attempt's result and its number.
  Expected<std::pair<core::RunResult, int>> run_attempts(Context& ctx, const core::LaunchPlan& plan,
                                                         std::optional<core::FirstFailure>& failure,
                                                         std::vector<AttemptFacts>& facts);
  /// The same with --spare-nodes: a bad node's verdict swaps a spare in (launch_failover.cpp).
  Expected<std::pair<core::RunResult, int>> run_failover(Context& ctx, const PlannedJob& job,
                                                         std::optional<core::FirstFailure>& failure,
                                                         std::vector<AttemptFacts>& facts);
  /// ezpz's flags (anywhere before --) for CLI11; the launcher's flags kept aside (launch_args.hpp).
  void normalize(std::vector<std::string>& tokens, bool had_separator) override;
  [[nodiscard]] bool takes_trailing_command() const override { return true; }
  [[nodiscard]] std::vector<std::string> take_globals() override { return std::move(globals_); }
  void set_trailing_command(std::vector<std::string> command, bool had_separator) override;

  /// The request as parsed (after set_trailing_command); tests read it.
  [[nodiscard]] const core::LaunchRequest& request() const { return request_; }
  [[nodiscard]] bool dry_run() const { return dry_run_; }
  [[nodiscard]] bool json() const { return json_; }
  /// A usage problem found while assembling the request ("" when none).
  [[nodiscard]] const std::string& request_error() const { return request_error_; }
  [[nodiscard]] double timeout() const { return timeout_s_; }
  [[nodiscard]] int retries() const { return retries_; }

 private:
  CLI::App* app_ = nullptr;
  core::LaunchRequest request_;
  std::vector<std::string> positional_;
  std::vector<std::string> launcher_tokens_;  ///< tokens before -- that are not ezpz's
  std::vector<std::string> globals_;          ///< ezpz's own -v flags found among them
  std::string token_error_;                   ///< a typo or a torchrun-only flag among them
  int nprocs_ = 0;
  int ppn_ = 0;
  int nhosts_ = 0;
  std::string hostfile_, machine_, launcher_, cpu_bind_, gpu_bind_, log_dir_, console_;
  bool dry_run_ = false;
  bool json_ = false;
  bool print_env_ = false;
  bool no_rank_env_ = false;
  bool label_ = false;
  bool keep_going_ = false;
  bool no_record_ = false;
  double timeout_s_ = 0;
  double time_limit_s_ = 0;
  double kill_after_s_ = 10;
  double start_timeout_s_ = 30;
  double retry_delay_s_ = 5;
  int retries_ = 0;
  std::string spare_nodes_;
  bool retry_delay_given_ = false;
  std::optional<double> job_end_;  ///< the scheduler's end of the job (failover), when known
  bool auto_retry_ = false;
  int max_failover_retries_ = -1;
  double min_attempt_s_ = core::kDefaultMinAttemptS;
  core::ReachOptions reach_{"ssh", "", false, true, ""};  ///< probes ask the nodes themselves, over SSH
  core::FailoverRequest failover_;
  std::string request_error_;
  std::function<void()> after_start_;    ///< once an attempt's processes run (the old records' pruning)
  std::vector<std::string> first_dirs_;  ///< the first attempt's directories, made by after_start_ (shims)
  /// The verdict on failed attempt `k` of `plan`: suspects probed, evictions; kept in `facts`.
  core::Verdict judge(Context& ctx, const PlannedJob& job, const core::LaunchPlan& plan, const core::RunResult& result,
                      AttemptFacts& facts);
};

}  // namespace ezpz::cli
