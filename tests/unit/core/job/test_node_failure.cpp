// Whether a job outlives a node's failure, as its scheduler says (failover's precondition), and
// ezpz submit --spare-nodes writing what it needs.
#include <catch2/catch.hpp>

#include "core/job/job_env.hpp"
#include "core/job/node_failure.hpp"

using namespace ezpz::core;

TEST_CASE("node failure: Slurm's kill_on_node_fail, a batch script's --no-kill, PBS's tolerate_node_failures",
          "[node_failure]") {
  CHECK(slurm_kill_on_node_fail(R"({"jobs": [{"job_id": 7, "kill_on_node_fail": true}]})") == true);
  CHECK(slurm_kill_on_node_fail(R"({"jobs": [{"job_id": 7, "kill_on_node_fail": false}]})") == false);
  CHECK_FALSE(slurm_kill_on_node_fail(R"({"jobs": [{"job_id": 7}]})"));
  CHECK_FALSE(slurm_kill_on_node_fail("scontrol: unrecognized option '--json'"));
  const auto shown =
      "JobId=4 JobName=b.sh\n   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0\n"
      "   Command=/home/u/run.sh\n   WorkDir=/home/u\n";
  CHECK(slurm_batch_script(shown) == "/home/u/run.sh");
  CHECK_FALSE(slurm_batch_script("JobId=5 BatchFlag=0\n   Command=/bin/bash\n"));  // salloc: no script
  CHECK(script_has_no_kill("#!/bin/bash\n#SBATCH -N 5\n#SBATCH --no-kill\nsrun x\n"));
  CHECK(script_has_no_kill("#SBATCH -N 5 -k\n"));
  CHECK_FALSE(script_has_no_kill("#!/bin/bash\n#SBATCH -N 5\n# --no-kill would help\nezpz launch --no-kill\n"));
  CHECK(pbs_tolerate_node_failures("Job Id: 1.pbs\n    tolerate_node_failures = all\n") == "all");
  CHECK_FALSE(pbs_tolerate_node_failures("Job Id: 1.pbs\n    Resource_List.walltime = 01:00:00\n"));
}

TEST_CASE("submit --spare-nodes: N nodes more, Slurm's --no-kill, the launch keeps them as spares", "[node_failure]") {
  SubmitSpec spec;
  spec.scheduler = Scheduler::slurm;
  spec.nodes = 4;
  spec.spare_nodes = 2;
  spec.command = {"python3", "train.py"};
  const auto slurm = render_submit_script(spec);
  REQUIRE(slurm);
  CHECK_THAT(*slurm, Catch::Contains("#SBATCH --nodes=6\n#SBATCH --no-kill\n"));
  CHECK_THAT(*slurm, Catch::Contains("ezpz launch --spare-nodes=2 -- python3 train.py"));
  spec.scheduler = Scheduler::pbs;
  const auto pbs = render_submit_script(spec);
  REQUIRE(pbs);
  CHECK_THAT(*pbs, Catch::Contains("#PBS -l select=6\n"));
  CHECK_THAT(*pbs, !Catch::Contains("no-kill"));
  spec.spare_nodes = 0;
  CHECK_THAT(*render_submit_script(spec), !Catch::Contains("--spare-nodes"));
  spec.spare_nodes = -1;
  CHECK_FALSE(render_submit_script(spec));
}
