#include <catch2/catch.hpp>

#include <algorithm>

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

TEST_CASE("golden argv: Aurora and SunSpot for 1, 2 and 4 nodes", "[launch_plan]") {
  for (const char* machine : {"aurora", "sunspot"}) {
    for (int n : {1, 2, 4}) {
      INFO(machine << " " << n);
      CHECK(line({machine, n}) == "mpiexec --envall --line-buffer --np=" + std::to_string(12 * n) +
                                      " --ppn=12 --hostfile=/pbs/nodefile --cpu-bind=" + kAuroraBind +
                                      " python3 -m app.train");
    }
  }
}

TEST_CASE("golden argv: Polaris and Sirius", "[launch_plan]") {
  for (const char* machine : {"polaris", "sirius"}) {
    for (int n : {1, 2, 4}) {
      INFO(machine << " " << n);
      CHECK(line({machine, n}) ==
            "mpiexec --envall --line-buffer --np=" + std::to_string(4 * n) +
                " --ppn=4 --hostfile=/pbs/nodefile --cpu-bind=depth --depth=8 python3 -m app.train");
    }
  }
}

TEST_CASE("golden argv: Sophia (space-separated values, which Open MPI 4.1 takes)", "[launch_plan]") {
  for (int n : {1, 2, 4}) {
    CHECK(line({"sophia", n}) == "mpirun -n " + std::to_string(8 * n) +
                                     " -N 8 --hostfile /pbs/nodefile -x PATH -x LD_LIBRARY_PATH python3 -m app.train");
  }
  Job root{"sophia", 2, {}, {}, {}, 0};
  root.request.topology.nprocs = 4;
  CHECK(
      line(root) ==
      "mpirun -n 4 -N 2 --allow-run-as-root --hostfile /pbs/nodefile -x PATH -x LD_LIBRARY_PATH python3 -m app.train");
}

TEST_CASE("golden argv: Frontier and Perlmutter", "[launch_plan]") {
  for (int n : {1, 2, 4}) {
    auto ns = std::to_string(n);
    CHECK(line({"frontier", n}) ==
          "srun -N" + ns + " -n" + std::to_string(8 * n) + " --cpus-per-task=7 --gpus-per-node=8 python3 -m app.train");
    CHECK(line({"perlmutter", n}) == "srun -N" + ns + " -n" + std::to_string(4 * n) +
                                         " --cpus-per-task=32 --gpus-per-node=4 --cpu-bind=cores python3 -m app.train");
  }
}

TEST_CASE("golden argv: local with Open MPI, MPICH and nothing", "[launch_plan]") {
  // One host and no scheduler: the built-in launcher, even where MPI is installed.
  CHECK(line({"local", 1, {}, {}, openmpi()}) == "python3 -m app.train");
  Job asked{"local", 1, {}, {}, openmpi()};
  asked.request.launcher = "mpirun";
  CHECK(line(asked) == "mpirun -np 1 --oversubscribe python3 -m app.train");
  Job hf{"local", 2, {}, {}, openmpi()};
  hf.request.hostfile = "/hf";
  hf.request.topology.ppn = 4;
  CHECK(line(hf) == "mpirun -np 8 --hostfile /hf --map-by ppr:4:node python3 -m app.train");
  Job root{"local", 1, {}, {}, openmpi(), 0};
  root.request.launcher = "mpirun";
  CHECK(line(root) == "mpirun -np 1 --allow-run-as-root --oversubscribe python3 -m app.train");

  LauncherInventory mpich{LauncherProgram{"mpiexec", "/usr/bin/mpiexec", LauncherStyle::mpich}, std::nullopt,
                          std::nullopt};
  Job m{"local", 1, {}, {}, mpich};
  m.request.launcher = "mpiexec";
  m.request.topology.nprocs = 4;
  CHECK(line(m) == "mpiexec -n 4 -ppn 4 python3 -m app.train");

  Job none{"local", 1};
  none.request.topology.nprocs = 3;
  auto p = plan(none);
  REQUIRE(p);
  CHECK(p->launcher == "local");
  CHECK(p->style == LauncherStyle::local);
  CHECK(p->topology.nprocs == 3);
  CHECK(p->argv == std::vector<std::string>{"python3", "-m", "app.train"});
}

TEST_CASE("topology flags shape the line", "[launch_plan]") {
  Job j{"aurora", 2};
  j.request.topology.nprocs = 8;
  CHECK_THAT(line(j), Catch::Contains("--np=8 --ppn=4 "));
  Job k{"aurora", 2};
  k.request.topology = {12, 6, std::nullopt};
  CHECK_THAT(line(k), Catch::Contains("--np=12 --ppn=6 "));
  Job bad{"aurora", 2};
  bad.request.topology.nprocs = 13;
  auto p = plan(bad);
  REQUIRE_FALSE(p);
  CHECK_THAT(p.error().message, Catch::Contains("-n 13 does not divide evenly over 2 hosts"));
}

TEST_CASE("CPU binding: --cpu-bind beats CPU_BIND beats the profile", "[launch_plan]") {
  Job env_only{"polaris", 2, {{"CPU_BIND", "--cpu-bind=list:0-1"}}};
  CHECK_THAT(line(env_only), Catch::EndsWith("--cpu-bind=list:0-1 python3 -m app.train"));
  Job both{"polaris", 2, {{"CPU_BIND", "list:0-1"}}};
  both.request.cpu_bind = "list:2-3";
  auto p = plan(both);
  REQUIRE(p);
  CHECK_THAT(shell_join(p->argv), Catch::Contains("--cpu-bind=list:2-3 python3"));
  CHECK_THAT(shell_join(p->argv), !Catch::Contains("list:0-1"));
  CHECK(std::count_if(p->warnings.begin(), p->warnings.end(), [](const std::string& w) {
          return w.find("both --cpu-bind and CPU_BIND") != std::string::npos;
        }) == 1);
  Job flag{"aurora", 1};
  flag.request.cpu_bind = "--cpu-bind=depth";
  CHECK_THAT(line(flag), Catch::Contains("--cpu-bind=depth python3"));  // aurora has no depth default
  Job srun{"frontier", 1};
  srun.request.cpu_bind = "cores";
  CHECK_THAT(line(srun), Catch::Contains("--gpus-per-node=8 --cpu-bind=cores python3"));
}

TEST_CASE("passthrough: launcher flags go before the command, verbatim", "[launch_plan]") {
  Job j{"aurora", 1};
  j.request.launcher_args = {"-x", "A=1", "--no-vni"};
  j.request.command = {"python3", "train.py", "--help", "-n", "5"};
  CHECK_THAT(line(j), Catch::EndsWith(kAuroraBind + " -x A=1 --no-vni python3 train.py --help -n 5"));
  Job d{"polaris", 1};
  d.request.launcher_args = {"--depth=4"};
  CHECK_THAT(line(d), Catch::Contains("--cpu-bind=depth --depth=4 python3"));  // the user's --depth wins
  Job local{"local", 1};
  local.request.launcher_args = {"-x", "A=1"};
  auto p = plan(local);
  REQUIRE_FALSE(p);
  CHECK_THAT(p.error().message, Catch::Contains("launcher flag -x needs an MPI launcher"));
}

TEST_CASE("profile env is added unless the user already set it", "[launch_plan]") {
  auto p = plan({"aurora", 1, {{"FI_MR_CACHE_MONITOR", "memhooks"}}});
  REQUIRE(p);
  REQUIRE(p->env.size() == 1);
  CHECK(p->env[0].first == "CCL_PROCESS_LAUNCHER");
}

TEST_CASE("launcher choice: --launcher, profile, scheduler, local", "[launch_plan]") {
  Job forced{"aurora", 2};
  forced.request.launcher = "local";
  auto p = plan(forced);
  REQUIRE(p);
  CHECK(p->launcher == "local");
  CHECK(p->topology.nhosts == 1);  // the built-in launcher runs on this host only
  CHECK(p->topology.nprocs == 12);

  Job many{"aurora", 2};
  many.request.launcher = "local";
  many.request.topology.nhosts = 2;
  auto q = plan(many);
  REQUIRE_FALSE(q);
  CHECK_THAT(q.error().message, Catch::Contains("runs on this host only"));

  Job missing{"aurora", 1};
  auto r = plan(missing);
  REQUIRE(r);
  REQUIRE_FALSE(r->warnings.empty());
  CHECK_THAT(r->warnings[0], Catch::Contains("mpiexec is not on PATH"));

  LaunchRequest req;
  req.command = {"true"};
  ClusterInfo cluster;
  cluster.scheduler = Scheduler::slurm;
  cluster.machine.name = "local";
  CHECK(choose_launcher(req, cluster, {})->program == "srun");
  cluster.scheduler = Scheduler::pbs;
  CHECK(choose_launcher(req, cluster, openmpi())->program == "mpirun");
  cluster.scheduler = Scheduler::local;
  CHECK(choose_launcher(req, cluster, {})->program == "local");
  cluster.hosts = {"laptop"};
  CHECK(choose_launcher(req, cluster, openmpi())->program == "local");  // one host: MPI not needed
  cluster.hosts = {"a", "b"};
  CHECK(choose_launcher(req, cluster, openmpi())->style == LauncherStyle::openmpi);  // a hostfile of two
  cluster.hosts.clear();

  // Hostname says Aurora, but no PBS job: run on this node, and say so.
  auto set = MachineSet::builtin();
  cluster.machine = *set->find("aurora");
  auto c = choose_launcher(req, cluster, {});
  CHECK(c->program == "local");
  REQUIRE(c->warning);
  CHECK_THAT(*c->warning, Catch::Contains("no pbs job found on aurora"));
  cluster.machine_forced = true;
  CHECK(choose_launcher(req, cluster, {})->program == "mpiexec");
}

TEST_CASE("no command is a usage error", "[launch_plan]") {
  LaunchRequest req;
  ClusterInfo cluster;
  cluster.hosts = {"h"};
  auto p = plan_launch(req, make_env({}), cluster, {});
  REQUIRE_FALSE(p);
  CHECK(p.error().code == ezpz::ExitCode::usage);
  CHECK_THAT(p.error().message, Catch::Contains("no command to launch"));
}

TEST_CASE("find_launchers reads PATH through the probe", "[launch_plan]") {
  FakeProbe probe;
  probe.programs["mpirun"] = "/usr/bin/mpirun";
  probe.links["/usr/bin/mpirun"] = "/usr/bin/mpirun.openmpi";
  probe.programs["srun"] = "/usr/bin/srun";
  auto inv = find_launchers(probe);
  CHECK_FALSE(inv.mpiexec);
  REQUIRE(inv.mpirun);
  CHECK(inv.mpirun->style == LauncherStyle::openmpi);
  REQUIRE(inv.srun);
  CHECK(inv.srun->style == LauncherStyle::srun);
}

TEST_CASE("find_launchers with --launcher looks for that one alone", "[launch_plan]") {
  FakeProbe probe;
  probe.programs["mpiexec"] = "/usr/bin/mpiexec";
  probe.programs["mpirun"] = "/usr/bin/mpirun";
  probe.links["/usr/bin/mpirun"] = "/usr/bin/mpirun.openmpi";
  probe.programs["srun"] = "/usr/bin/srun";
  auto inv = find_launchers(probe, std::string("mpirun"));
  CHECK_FALSE(inv.mpiexec);
  CHECK_FALSE(inv.srun);
  REQUIRE(inv.mpirun);
  CHECK(inv.mpirun->style == LauncherStyle::openmpi);
  inv = find_launchers(probe, std::string("local"));
  CHECK_FALSE(inv.mpiexec);
  CHECK_FALSE(inv.mpirun);
  CHECK_FALSE(inv.srun);
}

TEST_CASE("the per-rank shim goes between the launcher flags and the command", "[launch_plan]") {
  Job j{"polaris", 2};
  j.rank_env = true;
  j.request.launcher_args = {"-x", "A=1"};
  auto p = plan(j);
  REQUIRE(p);
  CHECK(shell_join(p->argv) ==
        "mpiexec --envall --line-buffer --np=8 --ppn=4 --hostfile=/pbs/nodefile --cpu-bind=depth --depth=8 -x A=1 "
        "/opt/ezpz/bin/ezpz __rank-env --np=8 --ppn=4 --nhosts=2 --master-addr=host0 --restart=0/0 -- python3 -m "
        "app.train");
  CHECK(p->unset_env ==
        std::vector<std::string>{"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK"});
  Job off{"polaris", 2};
  auto q = plan(off);
  REQUIRE(q);
  CHECK(q->unset_env.empty());
  CHECK_THAT(shell_join(q->argv), !Catch::Contains("__rank-env"));
}

TEST_CASE("gpu binding: auto follows the machine, Polaris reversed", "[launch_plan]") {
  Job j{"polaris", 1};
  j.rank_env = true;
  j.request.gpu_bind = "auto";
  auto p = plan(j);
  REQUIRE(p);
  CHECK(p->rank.gpu_bind == GpuBind::cuda);
  CHECK(p->rank.gpu_reverse);
  CHECK_THAT(shell_join(p->argv), Catch::Contains("--gpu-bind=cuda --gpus=4 --gpu-reverse --"));
  Job a{"aurora", 1};
  a.request.gpu_bind = "auto";
  CHECK(plan(a)->rank.gpu_bind == GpuBind::ze);
  Job forced{"polaris", 1};
  forced.request.gpu_bind = "cuda";
  CHECK_FALSE(plan(forced)->rank.gpu_reverse);  // only the machine's own scheme is reversed
  Job none{"local", 1};
  none.request.gpu_bind = "auto";
  CHECK(plan(none)->rank.gpu_bind == GpuBind::none);
}

TEST_CASE("the label option maps to each launcher's own flag", "[launch_plan]") {
  struct Case {
    const char* machine;
    const char* flag;
  };
  for (auto [machine, flag] :
       {Case{"aurora", "--label"}, Case{"frontier", "--label"}, Case{"sophia", "--tag-output"}}) {
    Job j{machine, 1};
    j.request.label = true;
    j.request.launcher_args = {"--extra"};
    INFO(machine);
    CHECK_THAT(line(j), Catch::Contains(std::string(" ") + flag + " --extra python3"));
  }
  Job ompi{"local", 1, {}, {}, openmpi()};
  ompi.request.launcher = "mpirun";
  ompi.request.label = true;
  CHECK_THAT(line(ompi), Catch::Contains("--tag-output python3"));
  Job local{"local", 1};
  local.request.label = true;
  auto p = plan(local);
  REQUIRE(p);
  CHECK(p->label);
  CHECK(p->argv == std::vector<std::string>{"python3", "-m", "app.train"});
}

TEST_CASE("MASTER_ADDR uses the high-speed-network name only when it resolves", "[launch_plan]") {
  auto set = ezpz::test::builtin_machines();
  FakeProbe probe;
  const auto& aurora = *set.find("aurora");
  CHECK(master_address({"x4102c0s0b0n0.hostmgmt", "x4102c0s1b0n0"}, aurora, probe) == "x4102c0s0b0n0.hostmgmt");
  probe.resolvable.insert("x4102c0s0b0n0.hsn.cm.aurora.alcf.anl.gov");
  CHECK(master_address({"x4102c0s0b0n0.hostmgmt", "x4102c0s1b0n0"}, aurora, probe) ==
        "x4102c0s0b0n0.hsn.cm.aurora.alcf.anl.gov");
  CHECK(master_address({"n1"}, *set.find("local"), probe) == "n1");
}

TEST_CASE("MASTER_ADDR's look-up: none in a dry run, bounded and said when slow", "[launch_plan]") {
  auto set = ezpz::test::builtin_machines();
  FakeProbe probe;
  const auto& polaris = *set.find("polaris");
  const HostList hosts = {"x3005c0s7b0n0", "x3005c0s7b1n0"};
  const std::string hsn = "x3005c0s7b0n0.hsn.cm.polaris.alcf.anl.gov";
  std::vector<std::string> warnings;
  // A dry run: the name a launch on that machine uses, nothing looked up.
  CHECK(master_address(hosts, polaris, probe, Lookups::none, &warnings) == hsn);
  CHECK(probe.looked_up.empty());
  CHECK(warnings.empty());
  // A lost answer: cut short at kLookupTimeoutS, the first host instead, and said.
  probe.resolvable.insert(hsn);
  probe.lookup_seconds[hsn] = 5.0;
  CHECK(master_address(hosts, polaris, probe, Lookups::network, &warnings) == "x3005c0s7b0n0");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == hsn + " did not resolve within 2.0 s (slow DNS): MASTER_ADDR=x3005c0s7b0n0 instead");
  // Slow but in time: used, and said.
  warnings.clear();
  probe.lookup_seconds[hsn] = 1.2;
  CHECK(master_address(hosts, polaris, probe, Lookups::network, &warnings) == hsn);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == "looking up " + hsn + " took 1.2 s (slow DNS)");
  // In time: nothing said.
  warnings.clear();
  probe.lookup_seconds[hsn] = 0.01;
  CHECK(master_address(hosts, polaris, probe, Lookups::network, &warnings) == hsn);
  CHECK(warnings.empty());
}

TEST_CASE("each retry gets its restart count and a record directory of its own", "[launch]") {
  LaunchPlan plan;
  plan.style = LauncherStyle::srun;
  plan.rank.record_dir = "/h/.ezpz/jobs/7/launch-1";
  plan.rank.max_restarts = 2;
  plan.argv = {"srun",          "-n2", "/bin/ezpz", "__rank-env", "--np=2", "--record-dir=/h/.ezpz/jobs/7/launch-1",
               "--restart=0/2", "--",  "python3",   "t.py"};
  auto first = plan_for_attempt(plan, 0);
  CHECK(first.rank.record_dir == plan.rank.record_dir);
  CHECK(first.argv == with_shim_args(plan.argv, plan.rank));
  auto second = plan_for_attempt(plan, 2);
  CHECK(second.rank.restart_count == 2);
  CHECK(second.rank.record_dir == "/h/.ezpz/jobs/7/launch-1/retry-2");
  CHECK(std::count(second.argv.begin(), second.argv.end(), "--record-dir=/h/.ezpz/jobs/7/launch-1/retry-2") == 1);
  CHECK(std::count(second.argv.begin(), second.argv.end(), "--restart=2/2") == 1);
  CHECK(second.argv.back() == "t.py");
  // No shim (the built-in launcher, or --no-rank-env): the command is never rewritten.
  plan.style = LauncherStyle::local;
  plan.argv = {"python3", "t.py", "__rank-env", "--restart=0/2", "--"};
  CHECK(plan_for_attempt(plan, 1).argv == plan.argv);
}

// Part 4 of issue 16: GPUs per node from the allocation, not only the profile.

TEST_CASE("Aurora login node without a job: the built-in launcher, not PALS mpiexec", "[launch_plan]") {
  FakeProbe probe;
  probe.programs["mpiexec"] = "/opt/cray/pals/1.4/bin/mpiexec";
  auto env = make_env({}, "aurora-uan-0009");
  auto cluster = discover_cluster(env, ezpz::test::builtin_machines(), std::nullopt, std::nullopt, probe);
  REQUIRE(cluster);
  CHECK(cluster->machine.name == "aurora");
  CHECK(cluster->gpus.source == "default");  // a login node has none of the compute nodes' 12
  LaunchRequest req;
  req.command = {"python3", "train.py"};
  auto inv = find_launchers(probe);
  REQUIRE(inv.mpiexec);
  CHECK(inv.mpiexec->style == LauncherStyle::pals);
  auto p = plan_launch(req, env, *cluster, inv);
  REQUIRE(p);
  CHECK(p->launcher == "local");
  CHECK(p->topology == Topology{1, 1, 1});
  CHECK(p->argv == std::vector<std::string>{"python3", "train.py"});
  REQUIRE(p->warnings.size() == 1);
  CHECK(p->warnings[0] ==
        "no pbs job found on aurora: running on this node only with ezpz's built-in launcher (start a job first, "
        "e.g. qsub -I, to use mpiexec)");
  // With GPUs on the node, their device files count.
  probe.gpus = 2;
  auto dev = discover_cluster(env, ezpz::test::builtin_machines(), std::nullopt, std::nullopt, probe);
  CHECK(plan_launch(req, env, *dev, inv)->topology.nprocs == 2);
  // Frontier's login node with srun on PATH: srun there would ask for a new allocation.
  probe.programs["srun"] = "/usr/bin/srun";
  auto frontier = discover_cluster(make_env({}, "frontier-login03"), ezpz::test::builtin_machines(), std::nullopt,
                                   std::nullopt, probe);
  auto f = plan_launch(req, env, *frontier, find_launchers(probe));
  REQUIRE(f);
  CHECK(f->launcher == "local");
  CHECK_THAT(f->warnings[0], Catch::Contains("e.g. salloc, to use srun"));
}

TEST_CASE("the rank hub's variables: -x for Open MPI only, the whole environment elsewhere", "[launch_plan]") {
  struct Case {
    const char* machine;
    const char* launcher;
    bool named;
  };
  for (auto [machine, launcher, named] : {Case{"aurora", nullptr, false}, Case{"frontier", nullptr, false},
                                          Case{"sophia", nullptr, true}, Case{"local", "mpirun", true}}) {
    Job j{machine, 2, {}, {}, openmpi()};
    j.rank_env = true;
    if (launcher != nullptr) {
      j.request.launcher = launcher;
    }
    INFO(machine);
    const auto text = line(j);
    const std::string forward = " -x EZPZ_RANK_HUB -x EZPZ_RANK_HUB_KEY ";
    if (named) {
      REQUIRE_THAT(text, Catch::Contains(forward));
      CHECK(text.find(forward) < text.find(" __rank-env "));  // the launcher's flags, before the shim
    } else {
      CHECK_THAT(text, !Catch::Contains("EZPZ_RANK_HUB"));  // PALS --envall, srun and Hydra carry it all
    }
    CHECK_THAT(text, !Catch::Contains("EZPZ_RANK_HUB_KEY="));  // the secret is never on a command line
  }
  Job pals{"aurora", 2};
  CHECK_THAT(line(pals), Catch::StartsWith("mpiexec --envall --line-buffer "));
}

TEST_CASE("a rank shim on node-local storage is a warning when the job spans hosts", "[launch_plan]") {
  Job two{"polaris", 2};
  two.rank_env = true;
  auto p = plan(two);
  REQUIRE(p);
  CHECK_THAT(join(p->warnings, "\n"), !Catch::Contains("node-local"));  // /opt/ezpz/bin/ezpz: shared
  for (const char* exe : {"/tmp/ezpz", "/dev/shm/u/ezpz"}) {
    FakeProbe probe;
    auto set = MachineSet::builtin();
    REQUIRE(set);
    probe.files["/pbs/nodefile"] = "host0\nhost1\n";
    auto env = make_env({{"PBS_JOBID", "7.pbs"}, {"PBS_NODEFILE", "/pbs/nodefile"}}, "host0", 1000);
    env.self_exe = exe;
    auto cluster = discover_cluster(env, *set, std::string("polaris"), std::nullopt, probe);
    REQUIRE(cluster);
    LaunchRequest request;
    request.command = {"true"};
    auto local = plan_launch(request, env, *cluster, {});
    REQUIRE(local);
    CHECK_THAT(join(local->warnings, "\n"), Catch::Contains(std::string("ezpz is at ") + exe +
                                                            ", node-local storage, and the rank shim runs it "
                                                            "from that path on all 2 hosts"));
    request.topology.nhosts = 1;  // one host: its own /tmp is fine
    auto one = plan_launch(request, env, *cluster, {});
    REQUIRE(one);
    CHECK_THAT(join(one->warnings, "\n"), !Catch::Contains("node-local"));
  }
}

TEST_CASE("local_rank_environment: the plan's variables, then rank r's own unless --no-rank-env", "[launch_plan]") {
  LaunchPlan plan;
  plan.env = {{"EZPZ_A", "1"}};
  plan.rank.nprocs = 8;
  plan.rank.ppn = 4;
  plan.rank.nhosts = 2;
  plan.rank.master_addr = "node1";
  plan.rank.master_port = 29512;
  const auto env = ezpz::test::make_env({});
  const auto vars = local_rank_environment(plan, env, 5);
  REQUIRE(!vars.empty());
  CHECK(vars.front() == std::pair<std::string, std::string>{"EZPZ_A", "1"});
  auto value = [&](const std::string& name) {
    const auto it = std::find_if(vars.begin(), vars.end(), [&](const auto& kv) { return kv.first == name; });
    return it == vars.end() ? std::string("<unset>") : it->second;
  };
  CHECK(value("RANK") == "5");
  CHECK(value("LOCAL_RANK") == "1");
  CHECK(value("WORLD_SIZE") == "8");
  CHECK(value("GROUP_RANK") == "1");
  plan.rank_env = false;
  CHECK(local_rank_environment(plan, env, 5) == plan.env);
}
