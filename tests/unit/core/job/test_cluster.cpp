#include <catch2/catch.hpp>

#include "core/job/allocation.hpp"
#include "core/job/cluster.hpp"
#include "fake_probe.hpp"

using namespace ezpz::core;
using ezpz::test::FakeProbe;
using ezpz::test::make_env;

TEST_CASE("host source order: --hostfile, PBS_NODEFILE, HOSTFILE, aux dir, SLURM_NODELIST, hostname", "[cluster]") {
  auto env = make_env({{"PBS_NODEFILE", "/pbs/nf"}, {"HOSTFILE", "/h"}, {"SLURM_NODELIST", "n[1-2]"}}, "me");
  CHECK(choose_host_source(env, Scheduler::pbs, "/cli", {}).origin == "--hostfile");
  CHECK(choose_host_source(env, Scheduler::pbs, std::nullopt, {}).value == "/pbs/nf");
  env.vars.erase("PBS_NODEFILE");
  CHECK(choose_host_source(env, Scheduler::pbs, std::nullopt, {}).origin == "HOSTFILE");
  env.vars.erase("HOSTFILE");
  env.vars["PBS_JOBID"] = "4242.aurora-pbs";
  auto aux = choose_host_source(env, Scheduler::pbs, std::nullopt, {"42.other", "4242.aurora-pbs-0001.hostmgmt"});
  CHECK(aux.origin == "PBS aux dir");
  CHECK(aux.value == "/var/spool/pbs/aux/4242.aurora-pbs-0001.hostmgmt");
  auto slurm = choose_host_source(env, Scheduler::slurm, std::nullopt, {});
  CHECK(slurm.kind == HostSource::Kind::nodelist);
  CHECK(slurm.value == "n[1-2]");
  auto none = choose_host_source(make_env({}, "me"), Scheduler::local, std::nullopt, {});
  CHECK(none.kind == HostSource::Kind::this_host);
  CHECK(none.value == "me");
}

TEST_CASE("PBS aux lookup matches the whole job id, not a prefix of another", "[cluster]") {
  auto env = make_env({{"PBS_JOBID", "123.pbs"}});
  auto s = choose_host_source(env, Scheduler::pbs, std::nullopt, {"1234.pbs", "123.pbs"});
  CHECK(s.value == "/var/spool/pbs/aux/123.pbs");
}

TEST_CASE("discover_cluster: PBS job on Aurora", "[cluster]") {
  FakeProbe probe;
  probe.files["/pbs/nf"] = "x4102c0s0b0n0\nx4102c0s1b0n0\nx4102c0s0b0n0\n";
  auto env = make_env({{"PBS_JOBID", "1.a"}, {"PBS_NODEFILE", "/pbs/nf"}}, "x4102c0s0b0n0");
  auto c = discover_cluster(env, ezpz::test::builtin_machines(), std::nullopt, std::nullopt, probe);
  REQUIRE(c);
  CHECK(c->scheduler == Scheduler::pbs);
  CHECK(c->machine.name == "aurora");
  CHECK(c->hosts == HostList{"x4102c0s0b0n0", "x4102c0s1b0n0"});
  CHECK(c->gpus.per_node == 12);
}

TEST_CASE("discover_cluster: --machine and EZPZ_MACHINE beat the hostname", "[cluster]") {
  FakeProbe probe;
  auto env = make_env({{"EZPZ_MACHINE", "polaris"}}, "x4102c0s0b0n0");
  CHECK(discover_cluster(env, ezpz::test::builtin_machines(), std::nullopt, std::nullopt, probe)->machine.name ==
        "polaris");
  CHECK(discover_cluster(env, ezpz::test::builtin_machines(), "sophia", std::nullopt, probe)->machine.name == "sophia");
  auto bad = discover_cluster(env, ezpz::test::builtin_machines(), "nowhere", std::nullopt, probe);
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("--machine nowhere is not a known machine"));
}

TEST_CASE("discover_cluster: a foreign Cray's nid host is generic, --machine and EZPZ_MACHINE settle it", "[cluster]") {
  FakeProbe probe;
  probe.gpus = 8;
  auto env =
      make_env({{"SLURM_JOB_ID", "7"}, {"SLURM_NODELIST", "nid[001-002]"}, {"SLURM_CLUSTER_NAME", "lumi"}}, "nid001");
  auto generic = discover_cluster(env, ezpz::test::builtin_machines(), std::nullopt, std::nullopt, probe);
  REQUIRE(generic);
  CHECK(generic->machine.name == "local");
  CHECK(generic->machine_how == MachineEvidence::fallback);
  CHECK(generic->gpus.per_node == 8);  // the node's devices, not Perlmutter's 4
  CHECK_THAT(generic->machine_reason, Catch::Contains("which perlmutter shares with other sites"));
  auto named = discover_cluster(env, ezpz::test::builtin_machines(), "perlmutter", std::nullopt, probe);
  CHECK(named->machine.name == "perlmutter");
  CHECK(named->machine_how == MachineEvidence::named);
  CHECK(named->machine_reason == "named by --machine=perlmutter");
  env.vars["EZPZ_MACHINE"] = "perlmutter";
  auto from_env = discover_cluster(env, ezpz::test::builtin_machines(), std::nullopt, std::nullopt, probe);
  CHECK(from_env->machine.name == "perlmutter");
  CHECK(from_env->machine_reason == "named by EZPZ_MACHINE=perlmutter");
  // A name beats a signal for another machine, and a guess.
  auto aurora = make_env({{"EZPZ_MACHINE", "local"}, {"PBS_JOBID", "1.aurora-pbs"}}, "x4102c0s0b0n0");
  auto forced = discover_cluster(aurora, ezpz::test::builtin_machines(), std::nullopt, std::nullopt, probe);
  CHECK(forced->machine.name == "local");
  CHECK(discover_cluster(aurora, ezpz::test::builtin_machines(), "sunspot", std::nullopt, probe)->machine.name ==
        "sunspot");
}

TEST_CASE("discover_cluster: a named hostfile that is missing or empty is a usage error", "[cluster]") {
  FakeProbe probe;
  probe.files["/empty"] = "# nothing\n";
  auto env = make_env({});
  auto missing = discover_cluster(env, ezpz::test::builtin_machines(), std::nullopt, "/nope", probe);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ezpz::ExitCode::usage);
  CHECK_THAT(missing.error().message, Catch::Contains("/nope") && Catch::Contains("does not exist"));
  auto empty = discover_cluster(env, ezpz::test::builtin_machines(), std::nullopt, "/empty", probe);
  REQUIRE_FALSE(empty);
  CHECK_THAT(empty.error().message, Catch::Contains("lists no hosts"));
  auto from_env = discover_cluster(make_env({{"PBS_NODEFILE", "/gone"}}), ezpz::test::builtin_machines(), std::nullopt,
                                   std::nullopt, probe);
  REQUIRE_FALSE(from_env);
  CHECK_THAT(from_env.error().message, Catch::Contains("PBS_NODEFILE=/gone"));
}

TEST_CASE("discover_cluster: a hostfile line that is not a host name is a usage error, doctor finds it", "[cluster]") {
  FakeProbe probe;
  probe.files["/bad"] = "n1\n-oProxyCommand=x slots=2\n";
  probe.files["/good"] = "n1\nn2:4\n";
  for (auto [env, cli] :
       {std::pair{make_env({}), std::optional<std::string>("/bad")},
        std::pair{make_env({{"PBS_JOBID", "1.pbs"}, {"PBS_NODEFILE", "/bad"}}), std::optional<std::string>()}}) {
    auto c = discover_cluster(env, ezpz::test::builtin_machines(), std::nullopt, cli, probe);
    REQUIRE_FALSE(c);
    CHECK(c.error().code == ezpz::ExitCode::usage);
    CHECK_THAT(c.error().message, Catch::StartsWith("hostfile /bad line 2: '-oProxyCommand=x'"));
    auto found = malformed_hostfile(env, cli, probe);
    REQUIRE(found);
    CHECK(found->message == c.error().message);
  }
  // Fine, missing or not a file: nothing to say (discovery says the rest).
  CHECK_FALSE(malformed_hostfile(make_env({}), "/good", probe));
  CHECK_FALSE(malformed_hostfile(make_env({}), "/nope", probe));
  CHECK_FALSE(malformed_hostfile(make_env({{"SLURM_JOB_ID", "7"}, {"SLURM_NODELIST", "a;b"}}), std::nullopt, probe));
  auto nodelist = discover_cluster(make_env({{"SLURM_JOB_ID", "7"}, {"SLURM_NODELIST", "n[1-2],a;b"}}),
                                   ezpz::test::builtin_machines(), std::nullopt, std::nullopt, probe);
  REQUIRE_FALSE(nodelist);
  CHECK_THAT(nodelist.error().message, Catch::Contains("'a;b' is not a host name"));
}

TEST_CASE("discover_cluster: Slurm nodelist", "[cluster]") {
  FakeProbe probe;
  auto env =
      make_env({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "nid[001-003]"}, {"NERSC_HOST", "perlmutter"}}, "nid001");
  auto c = discover_cluster(env, ezpz::test::builtin_machines(), std::nullopt, std::nullopt, probe);
  REQUIRE(c);
  CHECK(c->hosts == HostList{"nid001", "nid002", "nid003"});
  CHECK(c->machine.name == "perlmutter");
  CHECK(c->machine_how == MachineEvidence::signal);
  auto bad = discover_cluster(make_env({{"SLURM_JOB_ID", "7"}, {"SLURM_NODELIST", "nid[1-"}}),
                              ezpz::test::builtin_machines(), std::nullopt, std::nullopt, probe);
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("nid[1-"));
}

TEST_CASE("GPUs per node: NGPU_PER_HOST, profile, device files, 1", "[cluster]") {
  auto set = ezpz::test::builtin_machines();
  const auto& local = *set.find("local");
  const auto& polaris = *set.find("polaris");
  CHECK(gpus_per_node(make_env({{"NGPU_PER_HOST", "6"}}), polaris, 2)->per_node == 6);
  CHECK(gpus_per_node(make_env({}), polaris, 2)->per_node == 4);
  auto dev = gpus_per_node(make_env({}), local, 2);
  CHECK(dev->per_node == 2);
  CHECK(dev->known);
  auto none = gpus_per_node(make_env({}), local, 0);
  CHECK(none->per_node == 1);
  CHECK_FALSE(none->known);
  auto bad = gpus_per_node(make_env({{"NGPU_PER_HOST", "lots"}}), local, 0);
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("NGPU_PER_HOST='lots'"));
}

TEST_CASE("GPUs per node: the allocation's variables and where the number came from", "[cluster]") {
  auto set = ezpz::test::builtin_machines();
  const auto& aurora = *set.find("aurora");
  const auto& polaris = *set.find("polaris");
  const auto& frontier = *set.find("frontier");
  const auto& local = *set.find("local");
  struct Case {
    const MachineProfile* machine;
    std::map<std::string, std::string, std::less<>> vars;
    int devices;
    int per_node;
    std::string source;
  };
  const std::vector<Case> cases = {
      {&aurora, {}, 0, 12, "machine profile"},
      {&aurora, {{"ZE_FLAT_DEVICE_HIERARCHY", "FLAT"}}, 0, 12, "machine profile"},
      {&aurora, {{"ZE_FLAT_DEVICE_HIERARCHY", "COMPOSITE"}}, 0, 6, "ZE_FLAT_DEVICE_HIERARCHY"},
      {&aurora,
       {{"ZE_FLAT_DEVICE_HIERARCHY", "composite"}, {"ZE_AFFINITY_MASK", "0,1.0,1.1"}},
       0,
       2,
       "ZE_AFFINITY_MASK"},
      {&aurora, {{"ZE_AFFINITY_MASK", "0,1.0,1.1"}}, 0, 3, "ZE_AFFINITY_MASK"},
      {&aurora, {{"NGPU_PER_HOST", "5"}, {"ZE_AFFINITY_MASK", "0"}}, 0, 5, "NGPU_PER_HOST"},
      {&polaris, {{"CUDA_VISIBLE_DEVICES", "0,1"}}, 0, 2, "CUDA_VISIBLE_DEVICES"},
      {&polaris, {{"CUDA_VISIBLE_DEVICES", "GPU-aa,GPU-bb,GPU-cc"}}, 0, 3, "CUDA_VISIBLE_DEVICES"},
      {&polaris, {{"CUDA_VISIBLE_DEVICES", "1,-1,2"}}, 0, 1, "CUDA_VISIBLE_DEVICES"},
      {&polaris, {{"HIP_VISIBLE_DEVICES", "0"}}, 0, 4, "machine profile"},
      {&frontier, {{"ROCR_VISIBLE_DEVICES", "0,1,2,3"}}, 0, 4, "ROCR_VISIBLE_DEVICES"},
      {&frontier, {{"HIP_VISIBLE_DEVICES", "4,5"}}, 0, 2, "HIP_VISIBLE_DEVICES"},
      {&frontier, {{"SLURM_GPUS_ON_NODE", "4"}}, 0, 4, "SLURM_GPUS_ON_NODE"},
      {&frontier, {{"SLURM_GPUS_PER_NODE", "gpu:2"}}, 0, 2, "SLURM_GPUS_PER_NODE"},
      {&frontier, {{"SLURM_GPUS_PER_NODE", "mi250x:4"}, {"ROCR_VISIBLE_DEVICES", "0,1"}}, 0, 2, "ROCR_VISIBLE_DEVICES"},
      {&local, {{"SLURM_GPUS_PER_NODE", "a100:2,v100:1"}}, 0, 3, "SLURM_GPUS_PER_NODE"},
      {&local, {{"CUDA_VISIBLE_DEVICES", "0,1"}}, 8, 2, "CUDA_VISIBLE_DEVICES"},  // no kind: every variable
      {&local, {{"CUDA_VISIBLE_DEVICES", "0,1"}}, 0, 1, "default"},               // no GPU seen: the list adds none
  };
  for (const auto& c : cases) {
    INFO(c.machine->name << " " << c.devices << " " << c.vars.size());
    auto g = gpus_per_node(make_env(c.vars), *c.machine, c.devices);
    REQUIRE(g);
    CHECK(g->per_node == c.per_node);
    CHECK(g->source == c.source);
  }
  auto hidden = gpus_per_node(make_env({{"CUDA_VISIBLE_DEVICES", "-1"}}), polaris, 0);
  CHECK(hidden->per_node == 1);
  CHECK_FALSE(hidden->known);
  auto detail = gpus_per_node(make_env({{"ZE_FLAT_DEVICE_HIERARCHY", "COMPOSITE"}}), aurora, 0);
  CHECK(detail->detail == "machine profile aurora (12), ZE_FLAT_DEVICE_HIERARCHY=COMPOSITE: one device per card (6)");
  // A profile that does not apply (no job on its scheduler): the node's own devices.
  CHECK(gpus_per_node(make_env({}), aurora, 0, false)->source == "default");
  CHECK(gpus_per_node(make_env({}), aurora, 2, false)->per_node == 2);
}

TEST_CASE("allocation parsers: device lists, ZE masks, Slurm counts", "[cluster]") {
  CHECK(count_visible_devices("0,1,2") == 3);
  CHECK(count_visible_devices(" 0, 1 ") == 2);
  CHECK(count_visible_devices("MIG-1,MIG-2") == 2);
  CHECK(count_visible_devices("0,x,1") == 1);
  CHECK(count_visible_devices("NoDevFiles") == 0);
  CHECK(count_ze_mask("0.0,0.1,1.0", false) == 3);
  CHECK(count_ze_mask("0.0,0.1,1.0", true) == 2);
  CHECK(count_ze_mask("0,0", false) == 1);
  CHECK(count_ze_mask("0,a,1", false) == 1);
  CHECK(parse_slurm_gpus("4") == 4);
  CHECK(parse_slurm_gpus("gpu:4") == 4);
  CHECK(parse_slurm_gpus("a100:4") == 4);
  CHECK(parse_slurm_gpus("gpu:a100:4(IDX:0-3)") == 4);
  CHECK(parse_slurm_gpus("a100:2,v100:1") == 3);
  CHECK_FALSE(parse_slurm_gpus("gpu"));
  CHECK_FALSE(parse_slurm_gpus("0"));
  CHECK(slurm_per_node_min("64(x2),32") == 32);
  CHECK(slurm_per_node_min("8") == 8);
  CHECK_FALSE(slurm_per_node_min("many"));
  CHECK(tiles_per_gpu("aurora") == 2);
  CHECK(tiles_per_gpu("polaris") == 1);

  auto t = slurm_tasks(
      make_env({{"SLURM_NTASKS_PER_NODE", "4"}, {"SLURM_JOB_CPUS_PER_NODE", "8(x3)"}, {"SLURM_CPUS_PER_TASK", "4"}}));
  CHECK(t.ntasks_per_node == 4);
  CHECK(t.cpu_limit() == 2);
  auto limit = slurm_ppn_limit(t);
  CHECK(limit.value == 2);
  CHECK(limit.source == "SLURM_JOB_CPUS_PER_NODE");
  CHECK(limit.detail == "SLURM_JOB_CPUS_PER_NODE=8(x3) with SLURM_CPUS_PER_TASK=4");
  auto over = slurm_tasks(
      make_env({{"SLURM_NTASKS_PER_NODE", "4"}, {"SLURM_JOB_CPUS_PER_NODE", "1(x3)"}, {"SLURM_OVERCOMMIT", "1"}}));
  CHECK_FALSE(over.cpu_limit());
  CHECK(slurm_ppn_limit(over).source == "SLURM_NTASKS_PER_NODE");
  CHECK(slurm_ppn_limit(slurm_tasks(make_env({}))).value == 0);
}

TEST_CASE("discover_cluster: an Aurora login node outside a job counts its own devices", "[cluster]") {
  FakeProbe probe;
  probe.gpus = 0;
  auto login = discover_cluster(make_env({}, "aurora-uan-0010"), ezpz::test::builtin_machines(), std::nullopt,
                                std::nullopt, probe);
  REQUIRE(login);
  CHECK(login->gpus.per_node == 1);
  CHECK_FALSE(login->gpus.known);
  // Named explicitly (planning from a laptop), the profile applies.
  auto named = discover_cluster(make_env({}, "laptop"), ezpz::test::builtin_machines(), "aurora", std::nullopt, probe);
  CHECK(named->gpus.per_node == 12);
  // Under Slurm the job's tasks and CPUs are read.
  auto slurm = discover_cluster(
      make_env({{"SLURM_JOB_ID", "1"}, {"SLURM_NODELIST", "n[1-3]"}, {"SLURM_NTASKS_PER_NODE", "1"}}, "n1"),
      ezpz::test::builtin_machines(), std::nullopt, std::nullopt, probe);
  REQUIRE(slurm);
  CHECK(slurm->slurm.ntasks_per_node == 1);
}

TEST_CASE("MPI flavour from the installed program", "[cluster]") {
  FakeProbe probe;
  probe.links["/usr/bin/mpirun"] = "/usr/bin/orterun";
  probe.links["/usr/bin/mpiexec"] = "/usr/bin/mpiexec.mpich";
  CHECK(detect_mpi_style(probe, "/usr/bin/mpirun") == LauncherStyle::openmpi);
  CHECK(detect_mpi_style(probe, "/usr/bin/mpiexec") == LauncherStyle::mpich);
  CHECK(detect_mpi_style(probe, "/opt/cray/pals/1.2/bin/mpiexec") == LauncherStyle::pals);
  probe.files["/opt/ompi/bin/ompi_info"] = "";
  CHECK(detect_mpi_style(probe, "/opt/ompi/bin/mpiexec") == LauncherStyle::openmpi);
  probe.files["/opt/m/bin/mpichversion"] = "";
  CHECK(detect_mpi_style(probe, "/opt/m/bin/mpiexec") == LauncherStyle::mpich);
}

TEST_CASE("config file location and loading", "[cluster]") {
  CHECK(config_location(make_env({{"EZPZ_CONFIG", "/c.toml"}, {"HOME", "/h"}}))->required);
  CHECK(config_location(make_env({{"XDG_CONFIG_HOME", "/x"}, {"HOME", "/h"}}))->path == "/x/ezpz/config.toml");
  CHECK(config_location(make_env({{"HOME", "/h"}}))->path == "/h/.config/ezpz/config.toml");
  CHECK_FALSE(config_location(make_env({})));

  FakeProbe probe;
  CHECK(load_machines(make_env({{"HOME", "/h"}}), probe));  // no user file: fine
  auto missing = load_machines(make_env({{"EZPZ_CONFIG", "/c.toml"}}), probe);
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message, Catch::Contains("/c.toml") && Catch::Contains("EZPZ_CONFIG"));
  probe.files["/h/.config/ezpz/config.toml"] = "[[machine]]\nname = \"box\"\nmatch_prefix = [\"box\"]\n";
  auto set = load_machines(make_env({{"HOME", "/h"}}), probe);
  REQUIRE(set);
  CHECK(set->identify(make_env({}, "box12")).profile->name == "box");
  probe.files["/h/.config/ezpz/config.toml"] = "[[machine]]\nname = \"box\"\nbogus = 1\n";
  auto bad = load_machines(make_env({{"HOME", "/h"}}), probe);
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("/h/.config/ezpz/config.toml:3: key 'bogus'"));
}
