#include <catch2/catch.hpp>

#include "core/launch/launch_dirs.hpp"

using namespace ezpz::core;

namespace {

LaunchPlan plan_with(LauncherStyle style, std::string record_dir, std::string log_dir = {}) {
  LaunchPlan plan;
  plan.style = style;
  plan.rank.record_dir = std::move(record_dir);
  plan.rank.log_dir = std::move(log_dir);
  return plan;
}

}  // namespace

TEST_CASE("launch dirs: each launch its own folder in --log-dir, a relative one against the working directory",
          "[launch_dirs]") {
  auto dirs = plan_log_dirs(std::string("logs"), "/home/u/proj", "20261206T010203", 4242);
  CHECK(dirs.base == "/home/u/proj/logs");
  CHECK(dirs.name == "launch-20261206T010203-4242");
  CHECK(dirs.run == "/home/u/proj/logs/launch-20261206T010203-4242");
  CHECK(plan_log_dirs(std::string("/scratch/l"), "/home/u", "S", 1).run == "/scratch/l/launch-S-1");
  CHECK(plan_log_dirs(std::nullopt, "/home/u", "S", 1).base.empty());
  CHECK(plan_log_dirs(std::string(), "/home/u", "S", 1).run.empty());
}

TEST_CASE("launch dirs: under a launcher the ranks' directories are made beside its start, not before",
          "[launch_dirs]") {
  const auto srun = plan_with(LauncherStyle::srun, "/h/jobs/slurm-7/launch-1", "/scratch/l/launch-1");
  auto steps = plan_record_steps(srun, {.record = true, .failover = false});
  CHECK(steps.prune);
  CHECK(steps.job_folder == "/h/jobs/slurm-7");
  CHECK(steps.make_first == std::vector<std::string>{"/h/jobs/slurm-7/launch-1", "/scratch/l/launch-1"});
  // The built-in launcher's ranks need them first; failover makes each attempt's; no shim, no dirs.
  CHECK(plan_record_steps(plan_with(LauncherStyle::local, "/h/j/l"), {.record = true, .failover = false})
            .make_first.empty());
  CHECK(plan_record_steps(srun, {.record = true, .failover = true}).make_first.empty());
  auto no_shim = srun;
  no_shim.rank_env = false;
  CHECK(plan_record_steps(no_shim, {.record = true, .failover = false}).make_first.empty());
  // No records (--no-record, EZPZ_NO_RECORD), or no record directory: nothing made, nothing pruned.
  CHECK_FALSE(plan_record_steps(srun, {.record = false, .failover = false}).prune);
  CHECK_FALSE(plan_record_steps(plan_with(LauncherStyle::srun, ""), {.record = true, .failover = false}).prune);
}

TEST_CASE("launch dirs: the log directory is named once when it is the record directory", "[launch_dirs]") {
  CHECK(launch_dirs(plan_with(LauncherStyle::srun, "/h/j/l", "/h/j/l")) == std::vector<std::string>{"/h/j/l"});
  CHECK(launch_dirs(plan_with(LauncherStyle::srun, "", "/s/l")) == std::vector<std::string>{"/s/l"});
}

TEST_CASE("launch dirs: each attempt's record directory tidied when empty, the last attempt's first", "[launch_dirs]") {
  const auto plan = plan_with(LauncherStyle::srun, "/h/j/l");
  CHECK(record_dirs_to_tidy(plan, 3) == std::vector<std::string>{"/h/j/l/retry-2", "/h/j/l/retry-1", "/h/j/l"});
  CHECK(record_dirs_to_tidy(plan, 1) == std::vector<std::string>{"/h/j/l"});
  CHECK(record_dirs_to_tidy(plan_with(LauncherStyle::srun, ""), 2).empty());
}
