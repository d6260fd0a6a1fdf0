#include <catch2/catch.hpp>

#include "core/job/scheduler.hpp"
#include "fake_probe.hpp"

using ezpz::core::detect_scheduler;
using ezpz::core::Scheduler;
using ezpz::test::make_env;

TEST_CASE("detect_scheduler: override, PBS, Slurm, local in that order", "[scheduler]") {
  CHECK(*detect_scheduler(make_env({})) == Scheduler::local);
  CHECK(*detect_scheduler(make_env({{"PBS_JOBID", "123.aurora"}})) == Scheduler::pbs);
  CHECK(*detect_scheduler(make_env({{"SLURM_JOB_ID", "9"}})) == Scheduler::slurm);
  CHECK(*detect_scheduler(make_env({{"SLURM_JOBID", "9"}})) == Scheduler::slurm);
  CHECK(*detect_scheduler(make_env({{"PBS_JOBID", "1"}, {"SLURM_JOB_ID", "9"}})) == Scheduler::pbs);
  CHECK(*detect_scheduler(make_env({{"PBS_JOBID", "1"}, {"EZPZ_SCHEDULER", "slurm"}})) == Scheduler::slurm);
  CHECK(*detect_scheduler(make_env({{"SLURM_JOB_ID", "9"}, {"EZPZ_SCHEDULER", "LOCAL"}})) == Scheduler::local);
  CHECK(*detect_scheduler(make_env({{"PBS_JOBID", ""}})) == Scheduler::local);
}

TEST_CASE("detect_scheduler: an unknown EZPZ_SCHEDULER is a usage error", "[scheduler]") {
  auto r = detect_scheduler(make_env({{"EZPZ_SCHEDULER", "lsf"}}));
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ezpz::ExitCode::usage);
  CHECK_THAT(r.error().message, Catch::Contains("EZPZ_SCHEDULER='lsf'") && Catch::Contains("pbs, slurm or local"));
}

TEST_CASE("job ids", "[scheduler]") {
  CHECK(ezpz::core::pbs_job_id(make_env({{"PBS_JOBID", "12345.x"}})) == "12345");
  CHECK(ezpz::core::pbs_job_id(make_env({{"PBS_JOBID", "8817.aurora-pbs-0001.hostmgmt.cm"}})) == "8817");
  CHECK_FALSE(ezpz::core::pbs_job_id(make_env({})));
  CHECK(ezpz::core::slurm_job_id(make_env({{"SLURM_JOBID", "77"}})) == "77");
}
