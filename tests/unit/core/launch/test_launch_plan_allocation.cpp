// Launch plans inside Slurm allocations: the job's tasks, CPUs and GPUs per node, srun's CPUs
// per rank, a machine's own launcher flags.
#include <catch2/catch.hpp>

#include "core/base/shell.hpp"
#include "core/base/strings.hpp"
#include "core/launch/launch_plan.hpp"
#include "fake_probe.hpp"
#include "unit/core/launch/launch_plan_job.hpp"

using namespace ezpz::core;
using ezpz::test::FakeProbe;
using ezpz::test::Job;
using ezpz::test::kAuroraBind;
using ezpz::test::line;
using ezpz::test::make_env;
using ezpz::test::openmpi;
using ezpz::test::plan;

TEST_CASE("Slurm passes the nodes when a subset or a hostfile is used", "[launch_plan]") {
  Job subset{"perlmutter", 4};
  subset.request.topology.nhosts = 2;
  CHECK(
      line(subset) ==
      "srun -N2 -n8 --cpus-per-task=32 --gpus-per-node=4 --nodelist=host0,host1 --cpu-bind=cores python3 -m app.train");
  Job hf{"frontier", 2};
  hf.request.hostfile = "/my/hosts";
  CHECK_THAT(line(hf), Catch::Contains("--nodelist=host0,host1 python3"));
}

TEST_CASE("allocation: Aurora and SunSpot devices with ZE_FLAT_DEVICE_HIERARCHY and ZE_AFFINITY_MASK",
          "[launch_plan]") {
  auto pals = [](int np, int ppn) {
    return "mpiexec --envall --line-buffer --np=" + std::to_string(np) + " --ppn=" + std::to_string(ppn) +
           " --hostfile=/pbs/nodefile --cpu-bind=" + kAuroraBind + " python3 -m app.train";
  };
  for (const char* machine : {"aurora", "sunspot"}) {
    INFO(machine);
    CHECK(line({machine, 2, {{"ZE_FLAT_DEVICE_HIERARCHY", "COMPOSITE"}}}) == pals(12, 6));
    CHECK(line({machine, 2, {{"ZE_FLAT_DEVICE_HIERARCHY", "FLAT"}}}) == pals(24, 12));
    CHECK(line({machine, 2, {{"ZE_AFFINITY_MASK", "0,1,2,3"}}}) == pals(8, 4));
    CHECK(line({machine, 1, {{"ZE_AFFINITY_MASK", "0.0,0.1,1.0"}}}) == pals(3, 3));  // FLAT: one per entry
    // COMPOSITE: a card's tiles are one device.
    CHECK(line({machine, 1, {{"ZE_FLAT_DEVICE_HIERARCHY", "COMPOSITE"}, {"ZE_AFFINITY_MASK", "0.0,0.1,1"}}}) ==
          pals(2, 2));
  }
  // Another kind's variable does not apply to Intel GPUs.
  CHECK(line({"aurora", 1, {{"CUDA_VISIBLE_DEVICES", "0"}}}) == pals(12, 12));
}

TEST_CASE("allocation: CUDA_VISIBLE_DEVICES on Polaris, ROCR/HIP_VISIBLE_DEVICES on Frontier", "[launch_plan]") {
  CHECK(line({"polaris", 2, {{"CUDA_VISIBLE_DEVICES", "0,1"}}}) ==
        "mpiexec --envall --line-buffer --np=4 --ppn=2 --hostfile=/pbs/nodefile --cpu-bind=depth --depth=8 "
        "python3 -m app.train");
  CHECK_THAT(line({"polaris", 1, {{"ROCR_VISIBLE_DEVICES", "0"}}}), Catch::Contains("--np=4 --ppn=4 "));
  CHECK(line({"frontier", 2, {{"ROCR_VISIBLE_DEVICES", "0,1,2,3"}}}) ==
        "srun -N2 -n8 --cpus-per-task=14 --gpus-per-node=4 python3 -m app.train");
  CHECK(line({"frontier", 2, {{"HIP_VISIBLE_DEVICES", "0,1"}}}) ==
        "srun -N2 -n4 --cpus-per-task=28 --gpus-per-node=2 python3 -m app.train");
  CHECK(line({"frontier", 1, {{"ROCR_VISIBLE_DEVICES", "0,1,2,3"}, {"HIP_VISIBLE_DEVICES", "0,1,2"}}}) ==
        "srun -N1 -n3 --cpus-per-task=18 --gpus-per-node=3 python3 -m app.train");
  // More devices listed than the node has: the profile's number stands.
  CHECK_THAT(line({"polaris", 1, {{"CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5"}}}), Catch::Contains("--np=4 --ppn=4 "));
}

TEST_CASE("allocation: Slurm --ntasks-per-node, SLURM_GPUS_ON_NODE and SLURM_GPUS_PER_NODE", "[launch_plan]") {
  const LauncherInventory srun{std::nullopt, std::nullopt,
                               LauncherProgram{"srun", "/usr/bin/srun", LauncherStyle::srun}};
  auto one = plan({"frontier", 2, {{"SLURM_NTASKS_PER_NODE", "1"}, {"SLURM_JOB_CPUS_PER_NODE", "1(x2)"}}, {}, srun});
  REQUIRE(one);
  CHECK(shell_join(one->argv) == "srun -N2 -n2 --gpus-per-node=1 python3 -m app.train");
  CHECK(one->ppn_limit.value == 1);
  CHECK(one->ppn_limit.source == "SLURM_NTASKS_PER_NODE");
  CHECK(one->warnings.empty());

  CHECK(line({"frontier", 2, {{"SLURM_GPUS_ON_NODE", "4"}}}) ==
        "srun -N2 -n8 --cpus-per-task=14 --gpus-per-node=4 python3 -m app.train");
  for (const char* value : {"4", "gpu:4", "a100:4", "gpu:a100:4"}) {
    INFO(value);
    CHECK(line({"frontier", 2, {{"SLURM_GPUS_PER_NODE", value}}}) ==
          "srun -N2 -n8 --cpus-per-task=14 --gpus-per-node=4 python3 -m app.train");
    // A machine of no profile: the allocation's GPUs are the number.
    CHECK(
        line({"local", 3, {{"SLURM_GPUS_PER_NODE", value}, {"SLURM_JOB_ID", "7"}, {"SLURM_NODELIST", "host[0-2]"}}}) ==
        "srun -N3 -n12 --gpus-per-node=4 python3 -m app.train");
  }
  CHECK_THAT(line({"frontier", 1, {{"SLURM_GPUS_ON_NODE", "2"}, {"SLURM_GPUS_PER_NODE", "4"}}}),
             Catch::Contains("-n2 --cpus-per-task=28 --gpus-per-node=2 "));  // what this node has wins
  // Both: GPUs per node, no more than the job's tasks per node.
  CHECK(line({"frontier", 3, {{"SLURM_GPUS_PER_NODE", "gpu:4"}, {"SLURM_NTASKS_PER_NODE", "2"}}}) ==
        "srun -N3 -n6 --cpus-per-task=28 --gpus-per-node=2 python3 -m app.train");
  // The CPUs srun may use per node bound the default too.
  auto cpus = plan({"frontier", 2, {{"SLURM_JOB_CPUS_PER_NODE", "6,4"}, {"SLURM_CPUS_PER_TASK", "2"}}});
  REQUIRE(cpus);
  CHECK_THAT(shell_join(cpus->argv), Catch::StartsWith("srun -N2 -n4 --cpus-per-task=2 --gpus-per-node=2 "));
  CHECK(cpus->ppn_limit.source == "SLURM_JOB_CPUS_PER_NODE");
  CHECK(line({"frontier", 2, {{"SLURM_JOB_CPUS_PER_NODE", "1(x2)"}, {"SLURM_OVERCOMMIT", "1"}}}) ==
        "srun -N2 -n16 --cpus-per-task=7 --gpus-per-node=8 python3 -m app.train");
}

TEST_CASE("allocation: asking beyond it warns, unless srun would refuse", "[launch_plan]") {
  // Enough CPUs: srun runs it, ignoring the job's --ntasks-per-node; ranks share GPUs.
  Job wide{"frontier", 2, {{"SLURM_NTASKS_PER_NODE", "1"}, {"SLURM_JOB_CPUS_PER_NODE", "128(x2)"}}};
  wide.request.topology.ppn = 16;
  auto p = plan(wide);
  REQUIRE(p);
  CHECK(shell_join(p->argv) == "srun -N2 -n32 --cpus-per-task=3 --gpus-per-node=8 python3 -m app.train");
  CHECK_THAT(join(p->warnings, "\n"), Catch::Contains("--ppn 16: srun ignores the job's --ntasks-per-node=1") &&
                                          Catch::Contains("ranks will share GPUs"));
  // Too few CPUs: srun would say "More processors requested than permitted".
  Job tight{"frontier", 2, {{"SLURM_NTASKS_PER_NODE", "1"}, {"SLURM_JOB_CPUS_PER_NODE", "1(x2)"}}};
  tight.request.topology.nprocs = 16;
  auto q = plan(tight);
  REQUIRE_FALSE(q);
  CHECK(q.error().code == ezpz::ExitCode::usage);
  CHECK(q.error().message ==
        "-n 16 (8 per node) is more than the 1 per node srun starts in this job (SLURM_JOB_CPUS_PER_NODE=1(x2)): "
        "use --ppn 1 or fewer, or allocate with --ntasks-per-node=8");
  tight.request.launcher_args = {"--overcommit"};
  CHECK(plan(tight));
  // Polaris and Aurora keep warning: PALS starts what it is asked.
  Job pbs{"polaris", 1, {{"CUDA_VISIBLE_DEVICES", "0,1"}}};
  pbs.request.topology.ppn = 4;
  auto r = plan(pbs);
  REQUIRE(r);
  CHECK_THAT(join(r->warnings, "\n"),
             Catch::Contains("more than the 2 GPUs per node") && Catch::Contains("CUDA_VISIBLE_DEVICES=0,1 (2)"));
}

TEST_CASE("Slurm with -n alone spreads the ranks evenly over the allocation", "[launch_plan]") {
  Job eight{"frontier", 2};
  eight.request.topology.nprocs = 8;
  CHECK(line(eight) == "srun -N2 -n8 --cpus-per-task=14 --gpus-per-node=4 python3 -m app.train");
  Job two{"frontier", 4};
  two.request.topology.nprocs = 2;
  CHECK(line(two) == "srun -N2 -n2 --cpus-per-task=56 --gpus-per-node=1 --nodelist=host0,host1 python3 -m app.train");
  Job three{"local", 3, {{"SLURM_NTASKS_PER_NODE", "1"}, {"SLURM_JOB_ID", "7"}, {"SLURM_NODELIST", "host[0-2]"}}};
  three.request.topology.nprocs = 3;
  CHECK(line(three) == "srun -N3 -n3 python3 -m app.train");
}

TEST_CASE("Slurm without GPUs: the job's tasks per node decide", "[launch_plan]") {
  // salloc -N2 --ntasks-per-node=2 on CPU nodes: two ranks a node, not one per default GPU.
  const std::map<std::string, std::string, std::less<>> cpu_job = {
      {"SLURM_JOB_ID", "7"}, {"SLURM_NODELIST", "host[0-1]"}, {"SLURM_NTASKS_PER_NODE", "2"}};
  CHECK(line({"local", 2, cpu_job}) == "srun -N2 -n4 python3 -m app.train");
  auto with_cpus = cpu_job;
  with_cpus.emplace("SLURM_JOB_CPUS_PER_NODE", "8(x2)");
  CHECK(line({"local", 2, with_cpus}) == "srun -N2 -n4 --cpus-per-task=4 python3 -m app.train");
  // With GPUs the GPUs still decide (within the job's tasks per node).
  auto gpus = cpu_job;
  gpus.emplace("SLURM_GPUS_ON_NODE", "1");
  CHECK(line({"local", 2, gpus}) == "srun -N2 -n2 --gpus-per-node=1 python3 -m app.train");
}

TEST_CASE("srun gets CPUs per rank: the job's, the machine's or the node's, and the user's -c wins", "[launch_plan]") {
  // The job's own --cpus-per-task (srun 22.05 to 23.02 does not inherit it).
  CHECK(line({"perlmutter", 1, {{"SLURM_CPUS_PER_TASK", "16"}}}) ==
        "srun -N1 -n4 --cpus-per-task=16 --gpus-per-node=4 --cpu-bind=cores python3 -m app.train");
  // The machine's, within what the job has on a node.
  CHECK_THAT(line({"perlmutter", 1, {{"SLURM_JOB_CPUS_PER_NODE", "64"}}}), Catch::Contains(" --cpus-per-task=16 "));
  // The user's own -c or --cpus-per-task: kept, nothing added.
  for (const auto& flag : std::vector<std::vector<std::string>>{{"-c", "8"}, {"--cpus-per-task=8"}}) {
    Job own{"frontier", 1};
    own.request.launcher_args = flag;
    const auto got = line(own);
    CHECK(got.find("--cpus-per-task=7") == std::string::npos);
    CHECK_THAT(got, Catch::EndsWith(join(flag, " ") + " python3 -m app.train"));
  }
}

TEST_CASE("a machine's own launcher flags: after ezpz's, before the user's", "[launch_plan]") {
  Job closest{"frontier", 2};
  closest.config =
      "[[machine]]\nname = \"frontier\"\nlauncher_args = [\"--gpus-per-task=1\", \"--gpu-bind=closest\"]\n";
  closest.request.launcher_args = {"--verbose"};
  // Its own GPU request replaces ezpz's --gpus-per-node.
  CHECK(line(closest) ==
        "srun -N2 -n16 --cpus-per-task=7 --gpus-per-task=1 --gpu-bind=closest --verbose python3 -m app.train");
  Job bad{"frontier", 1};
  bad.config = "[[machine]]\nname = \"frontier\"\nlauncher_args = \"--verbose\"\n";
  auto set = MachineSet::builtin();
  REQUIRE(set);
  auto merged = set->merge_toml(bad.config, "config.toml");
  REQUIRE_FALSE(merged);
  CHECK_THAT(merged.error().message, Catch::Contains("launcher_args") && Catch::Contains("list of strings"));
}
