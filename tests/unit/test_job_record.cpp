#include <catch2/catch.hpp>

#include "core/job_record.hpp"
#include "fake_probe.hpp"

using ezpz::core::record_path;
using ezpz::core::Scheduler;
using ezpz::test::make_env;

TEST_CASE("job records go under EZPZ_HOME or ~/.ezpz, by job id", "[job_record]") {
  auto env = make_env({{"HOME", "/home/u"}, {"PBS_JOBID", "8817.aurora-pbs"}});
  env.pid = 42;
  CHECK(record_path(env, Scheduler::pbs, "20261122T003418") ==
        "/home/u/.ezpz/jobs/8817/launch-20261122T003418-42.json");
  env.vars["EZPZ_HOME"] = "/scratch/ez";
  env.vars["SLURM_JOB_ID"] = "77";
  CHECK(record_path(env, Scheduler::slurm, "20261122T003418") == "/scratch/ez/jobs/77/launch-20261122T003418-42.json");
  CHECK(record_path(env, Scheduler::local, "20261122T003418") ==
        "/scratch/ez/jobs/local-20261122T003418/launch-20261122T003418-42.json");
  CHECK_FALSE(record_path(make_env({}), Scheduler::local, "x"));
}
