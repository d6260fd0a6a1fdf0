#include <catch2/catch.hpp>

#include "core/job/job_record.hpp"
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

TEST_CASE("job records: wanted unless --no-record or EZPZ_NO_RECORD, how many are kept", "[job_record]") {
  using ezpz::core::records_to_keep;
  using ezpz::core::records_wanted;
  CHECK(records_wanted(make_env({}), false));
  CHECK_FALSE(records_wanted(make_env({}), true));
  CHECK_FALSE(records_wanted(make_env({{"EZPZ_NO_RECORD", "1"}}), false));
  CHECK_FALSE(records_wanted(make_env({{"EZPZ_NO_RECORD", "yes"}}), false));
  CHECK(records_wanted(make_env({{"EZPZ_NO_RECORD", "0"}}), false));
  CHECK(records_wanted(make_env({{"EZPZ_NO_RECORD", ""}}), false));
  CHECK(records_to_keep(make_env({})) == 100);
  CHECK(records_to_keep(make_env({{"EZPZ_KEEP_RECORDS", "5"}})) == 5);
  CHECK(records_to_keep(make_env({{"EZPZ_KEEP_RECORDS", "0"}})) == 0);
  CHECK(records_to_keep(make_env({{"EZPZ_KEEP_RECORDS", "-3"}})) == 100);
  CHECK(records_to_keep(make_env({{"EZPZ_KEEP_RECORDS", "lots"}})) == 100);
}

TEST_CASE("job records: the oldest finished ones beyond the newest N are pruned, with their directories",
          "[job_record]") {
  using ezpz::core::records_to_prune;
  const std::map<std::string, std::vector<std::string>> listing = {
      {"8817", {"launch-20261122T003418-42.json", "launch-20261122T003418-42", "launch-20261124T100000-7.json"}},
      {"local-20261123T120000", {"launch-20261123T120000-9.json"}},
      // still running (no .json yet): never pruned, however old
      {"local-20261101T000000", {"launch-20261101T000000-3"}},
      {"stray", {"notes.txt", "launch-.json"}},
  };
  CHECK(records_to_prune("/h/jobs", listing, 1) ==
        std::vector<std::string>{"/h/jobs/8817/launch-20261122T003418-42.json",
                                 "/h/jobs/8817/launch-20261122T003418-42",
                                 "/h/jobs/local-20261123T120000/launch-20261123T120000-9.json",
                                 "/h/jobs/local-20261123T120000/launch-20261123T120000-9"});
  CHECK(records_to_prune("/h/jobs", listing, 2).size() == 2);
  CHECK(records_to_prune("/h/jobs", listing, 3).empty());
  CHECK(records_to_prune("/h/jobs", listing, 0).empty());  // 0 keeps every one
  // Pruned while a launch runs: its own record, not written yet, is one of the N.
  CHECK(records_to_prune("/h/jobs", listing, 3, 1) == records_to_prune("/h/jobs", listing, 2));
  CHECK(records_to_prune("/h/jobs", listing, 1, 1).size() == 6);  // every finished one
  CHECK(records_to_prune("/h/jobs", listing, 4, 1).empty());
  CHECK(records_to_prune("/h/jobs", listing, 0, 1).empty());
}

TEST_CASE("job records: a job folder goes only when nothing is left in it, never the running launch's",
          "[job_record]") {
  using ezpz::core::emptied_job_folders;
  using ezpz::core::records_to_prune;
  const std::map<std::string, std::vector<std::string>> listing = {
      {"8817", {"launch-20261122T003418-42.json", "launch-20261122T003418-42", "launch-20261124T100000-7.json"}},
      {"local-20261123T120000", {"launch-20261123T120000-9.json"}},
      {"local-20261101T000000", {"launch-20261101T000000-3"}},  // still running
      {"empty", {}},
      {"local-20261201T090000", {}},  // this launch's, being filled
  };
  const auto pruned = records_to_prune("/h/jobs", listing, 1);
  CHECK(emptied_job_folders("/h/jobs", listing, pruned, "/h/jobs/local-20261201T090000") ==
        std::vector<std::string>{"/h/jobs/empty", "/h/jobs/local-20261123T120000"});
  CHECK(emptied_job_folders("/h/jobs", listing, {}, "") ==
        std::vector<std::string>{"/h/jobs/empty", "/h/jobs/local-20261201T090000"});
}
