// Site settings in launch plans (docs/machines.md "Site settings"): a profile's env always, its
// env_at_scale above at_scale_nodes hosts, the user's value always winning; the guess warning.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "core/launch/launch_plan.hpp"
#include "fake_probe.hpp"

using namespace ezpz::core;
using ezpz::test::FakeProbe;
using ezpz::test::make_env;

namespace {

using Vars = std::map<std::string, std::string, std::less<>>;

/// A plan for `nhosts` hosts of a job on `host`; `machine` names it with --machine when given.
LaunchPlan plan_on(const std::string& host, int nhosts, Vars vars, std::optional<std::string> machine = std::nullopt,
                   const std::string& scheduler = "pbs") {
  FakeProbe probe;
  std::string nodes;
  for (int i = 0; i < nhosts; ++i) {
    nodes += host + "-" + std::to_string(i) + "\n";
  }
  if (scheduler == "pbs") {
    vars.emplace("PBS_JOBID", "7.pbs");
    vars.emplace("PBS_NODEFILE", "/pbs/nodefile");
    probe.files["/pbs/nodefile"] = nodes;
  } else {
    vars.emplace("SLURM_JOB_ID", "4242");
    vars.emplace("SLURM_NODELIST", host + "-[0-" + std::to_string(nhosts - 1) + "]");
  }
  auto env = make_env(vars, host, 1001);
  auto cluster = discover_cluster(env, ezpz::test::builtin_machines(), machine, std::nullopt, probe);
  REQUIRE(cluster);
  LaunchRequest request;
  request.command = {"python3", "train.py"};
  request.rank_env = false;
  const LauncherInventory inventory{LauncherProgram{"mpiexec", "/opt/pals/bin/mpiexec", LauncherStyle::pals},
                                    std::nullopt, LauncherProgram{"srun", "/usr/bin/srun", LauncherStyle::srun}};
  auto plan = plan_launch(request, env, *cluster, inventory);
  INFO((plan ? "" : plan.error().message));
  REQUIRE(plan);
  return *plan;
}

std::optional<std::string> value_of(const LaunchPlan& p, const std::string& name) {
  auto it = std::find_if(p.env.begin(), p.env.end(), [&](const auto& kv) { return kv.first == name; });
  return it == p.env.end() ? std::nullopt : std::optional<std::string>(it->second);
}

const Vars kAuroraJob = {{"PBS_O_HOST", "aurora-uan-0010.hostmgmt1000.cm.aurora.alcf.anl.gov"}};

}  // namespace

TEST_CASE("Aurora's at-scale settings appear only above 16 nodes", "[machine_env][launch_plan]") {
  for (int nhosts : {1, 2, 16}) {
    INFO(nhosts);
    auto p = plan_on("x4102c0s0b0n0", nhosts, kAuroraJob);
    CHECK(p.machine == "aurora");
    CHECK(p.env == std::vector<std::pair<std::string, std::string>>{{"CCL_PROCESS_LAUNCHER", "pmix"},
                                                                    {"FI_MR_CACHE_MONITOR", "userfaultfd"}});
  }
  auto big = plan_on("x4102c0s0b0n0", 17, kAuroraJob);
  CHECK(big.topology.nhosts == 17);
  CHECK(value_of(big, "CCL_PROCESS_LAUNCHER") == "pmix");
  CHECK(value_of(big, "FI_CXI_DEFAULT_CQ_SIZE") == "131072");
  CHECK(value_of(big, "FI_CXI_OFLOW_BUF_SIZE") == "8388608");
  CHECK(value_of(big, "FI_CXI_CQ_FILL_PERCENT") == "20");
  CHECK(value_of(big, "CCL_KVS_MODE") == "mpi");
  CHECK(value_of(big, "CCL_KVS_CONNECTION_TIMEOUT") == "600");
  CHECK(value_of(big, "CCL_ALLREDUCE_SCALEOUT") == "direct:0-1048576;rabenseifner:1048577-max");
  CHECK(value_of(big, "CCL_CONFIGURATION_PATH") == "");
  CHECK(big.env.size() == 2 + 12);
  CHECK(big.warnings.empty());
}

TEST_CASE("the user's value always wins, even an empty one", "[machine_env][launch_plan]") {
  auto vars = kAuroraJob;
  vars["FI_CXI_DEFAULT_CQ_SIZE"] = "1048576";
  vars["CCL_PROCESS_LAUNCHER"] = "none";
  vars["CCL_CONFIGURATION_PATH"] = "";
  auto p = plan_on("x4102c0s0b0n0", 32, vars);
  CHECK_FALSE(value_of(p, "FI_CXI_DEFAULT_CQ_SIZE"));
  CHECK_FALSE(value_of(p, "CCL_PROCESS_LAUNCHER"));
  CHECK_FALSE(value_of(p, "CCL_CONFIGURATION_PATH"));
  CHECK(value_of(p, "FI_CXI_OFLOW_BUF_SIZE") == "8388608");
}

TEST_CASE("env_at_scale wins over env for the same name", "[machine_env][launch_plan]") {
  auto set = ezpz::test::builtin_machines();
  REQUIRE(
      set.merge_toml("[[machine]]\nname = \"box\"\nmatch_prefix = [\"box\"]\nlauncher = \"srun\"\nstyle = "
                     "\"srun\"\nscheduler = \"slurm\"\nat_scale_nodes = 1\n[machine.env]\nA = \"small\"\nB = "
                     "\"b\"\n[machine.env_at_scale]\nA = \"big\"\n",
                     "config.toml"));
  FakeProbe probe;
  for (auto [nhosts, want] : {std::pair{1, "small"}, std::pair{2, "big"}}) {
    auto env = make_env({{"SLURM_JOB_ID", "1"}, {"SLURM_NODELIST", "box[1-2]"}}, "box1");
    auto cluster = discover_cluster(env, set, std::nullopt, std::nullopt, probe);
    REQUIRE(cluster);
    LaunchRequest request;
    request.command = {"x"};
    request.topology.nhosts = nhosts;
    auto p = plan_launch(request, env, *cluster, LauncherInventory{});
    REQUIRE(p);
    CHECK(value_of(*p, "A") == want);
    CHECK(value_of(*p, "B") == "b");
    CHECK(p->env.size() == 2);
  }
}

TEST_CASE("Frontier: sockets on hsn0 and MIOpen's cache under /tmp per user and job", "[machine_env][launch_plan]") {
  auto p = plan_on("frontier00001", 2, {}, std::nullopt, "slurm");
  CHECK(p.machine == "frontier");
  CHECK(value_of(p, "NCCL_SOCKET_IFNAME") == "hsn0");
  CHECK(value_of(p, "MIOPEN_USER_DB_PATH") == "/tmp/miopen-cache-1001-4242");
  CHECK(value_of(p, "MIOPEN_CUSTOM_CACHE_DIR") == "/tmp/miopen-cache-1001-4242");
  CHECK(p.rank.master_addr == "frontier00001-0");  // the first host, as OLCF's $(hostname -i) on it
  auto mine = plan_on("frontier00001", 2, {{"NCCL_SOCKET_IFNAME", "hsn0,hsn1,hsn2,hsn3"}}, std::nullopt, "slurm");
  CHECK_FALSE(value_of(mine, "NCCL_SOCKET_IFNAME"));
}

TEST_CASE("a guessed machine is a launch warning, a confirmed or named one is not", "[machine_env][launch_plan]") {
  auto guessed = plan_on("x4102c0s0b0n0", 2, {});
  CHECK(guessed.machine == "aurora");
  REQUIRE(guessed.warnings.size() == 1);
  CHECK(guessed.warnings[0] ==
        "guessed machine aurora: hostname 'x4102c0s0b0n0' starts with 'x4', which aurora shares with other sites, "
        "and there is no PBS_JOBID or PBS_O_HOST containing 'aurora': set EZPZ_MACHINE=aurora (or "
        "EZPZ_MACHINE=local) or pass --machine to settle it");
  CHECK(plan_on("x4102c0s0b0n0", 2, kAuroraJob).warnings.empty());
  CHECK(plan_on("x4102c0s0b0n0", 2, {}, "aurora").warnings.empty());
  auto generic = plan_on("nid001", 2, {{"SLURM_CLUSTER_NAME", "lumi"}}, std::nullopt, "slurm");
  CHECK(generic.machine == "local");
  CHECK(generic.env.empty());
  CHECK(generic.warnings.empty());
}
