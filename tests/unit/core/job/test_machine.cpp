#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "core/job/machine.hpp"
#include "fake_probe.hpp"

using ezpz::core::LauncherStyle;
using ezpz::core::MachineSet;

namespace {

using ezpz::core::MachineEvidence;
using Vars = std::map<std::string, std::string, std::less<>>;

struct DetectCase {
  const char* host;
  Vars vars;
  const char* machine;
  MachineEvidence how;
  const char* reason;  ///< a golden part of the evidence
};

}  // namespace

TEST_CASE("machine rules: a site's own prefix decides alone", "[machine]") {
  auto set = ezpz::test::builtin_machines();
  for (const auto& c : std::vector<DetectCase>{
           {"aurora-uan-0010",
            {},
            "aurora",
            MachineEvidence::hostname,
            "hostname 'aurora-uan-0010' starts with 'aurora'"},
           {"sunspot-uan-0001", {}, "sunspot", MachineEvidence::hostname, "starts with 'sunspot'"},
           {"polaris-login-02", {}, "polaris", MachineEvidence::hostname, "starts with 'polaris'"},
           {"sirius-login-01", {}, "sirius", MachineEvidence::hostname, "starts with 'sirius' and contains 'sirius'"},
           {"x3001c0s7b0n0.sirius.alcf.anl.gov",
            {},
            "sirius",
            MachineEvidence::hostname,
            "starts with 'x3' and contains 'sirius'"},
           {"sophia-gpu-07", {}, "sophia", MachineEvidence::hostname, "starts with 'sophia'"},
           {"frontier00123", {}, "frontier", MachineEvidence::hostname, "starts with 'frontier'"},
           {"frontier-login01", {}, "frontier", MachineEvidence::hostname, "starts with 'frontier'"},
           {"perlmutter-login", {}, "perlmutter", MachineEvidence::hostname, "starts with 'perlmutter'"},
           {"AURORA-UAN-0010", {}, "aurora", MachineEvidence::hostname, "starts with 'aurora'"},
           {"myworkstation",
            {},
            "local",
            MachineEvidence::fallback,
            "no machine profile matches hostname 'myworkstation'"},
           {"", {}, "local", MachineEvidence::fallback, "no machine profile matches hostname ''"},
       }) {
    INFO(c.host);
    auto env = ezpz::test::make_env(c.vars, c.host);
    auto m = set.identify(env);
    CHECK(m.profile->name == c.machine);
    CHECK(m.how == c.how);
    CHECK_THAT(m.reason, Catch::Contains(c.reason));
  }
}

TEST_CASE("machine rules: a shared prefix needs the site's signal", "[machine]") {
  auto set = ezpz::test::builtin_machines();
  const std::string aurora_job = "8817.aurora-pbs-0001.hostmgmt.cm.aurora.alcf.anl.gov";
  for (const auto& c : std::vector<DetectCase>{
           // Aurora: x4 + the PBS server or the submit host.
           {"x4105c0s4b0n0",
            {{"PBS_JOBID", aurora_job}},
            "aurora",
            MachineEvidence::signal,
            "hostname 'x4105c0s4b0n0' starts with 'x4' and PBS_JOBID contains 'aurora'"},
           {"x4105c0s4b0n0",
            {{"PBS_O_HOST", "aurora-uan-0010.hostmgmt1000.cm.aurora.alcf.anl.gov"}},
            "aurora",
            MachineEvidence::signal,
            "PBS_O_HOST contains 'aurora'"},
           {"x4105c0s4b0n0",
            {},
            "aurora",
            MachineEvidence::guessed,
            "hostname 'x4105c0s4b0n0' starts with 'x4', which aurora shares with other sites, and there is no "
            "PBS_JOBID or PBS_O_HOST containing 'aurora'"},
           {"x4105c0s4b0n0",
            {{"PBS_JOBID", "1.pbs-server.example.org"}},
            "aurora",
            MachineEvidence::guessed,
            "no PBS_JOBID or PBS_O_HOST containing 'aurora'"},
           // SunSpot: x1.
           {"x1002c0s3b0n0",
            {{"PBS_O_HOST", "uan-0001.head.cm.sunspot.alcf.anl.gov"}},
            "sunspot",
            MachineEvidence::signal,
            "starts with 'x1' and PBS_O_HOST contains 'sunspot'"},
           {"x1002c0s3b0n0", {}, "sunspot", MachineEvidence::guessed, "which sunspot shares with other sites"},
           // Polaris and Sirius share x3: the signal picks; alone it is a Polaris guess.
           {"x3001c0s7b0n0",
            {{"PBS_JOBID", "12.polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov"}},
            "polaris",
            MachineEvidence::signal,
            "starts with 'x3' and PBS_JOBID contains 'polaris'"},
           {"x3001c0s7b0n0",
            {{"PBS_O_HOST", "sirius-login-01.alcf.anl.gov"}},
            "sirius",
            MachineEvidence::signal,
            "starts with 'x3' and PBS_O_HOST contains 'sirius'"},
           {"x3001c0s7b0n0",
            {},
            "polaris",
            MachineEvidence::guessed,
            "which polaris shares with other sites, and there is no PBS_JOBID or PBS_O_HOST containing 'polaris'"},
           // Perlmutter: nid/login + NERSC_HOST or the Slurm cluster name.
           {"nid001234",
            {{"NERSC_HOST", "perlmutter"}},
            "perlmutter",
            MachineEvidence::signal,
            "hostname 'nid001234' starts with 'nid' and NERSC_HOST contains 'perlmutter'"},
           {"nid001234",
            {{"SLURM_CLUSTER_NAME", "perlmutter"}},
            "perlmutter",
            MachineEvidence::signal,
            "SLURM_CLUSTER_NAME contains 'perlmutter'"},
           {"login31",
            {{"NERSC_HOST", "perlmutter"}},
            "perlmutter",
            MachineEvidence::signal,
            "starts with 'login' and NERSC_HOST contains 'perlmutter'"},
           // A foreign Cray (LUMI, say) names nodes nid* too: not Perlmutter.
           {"nid001",
            {{"SLURM_CLUSTER_NAME", "lumi"}},
            "local",
            MachineEvidence::fallback,
            "hostname 'nid001' starts with 'nid', which perlmutter shares with other sites, and there is no "
            "NERSC_HOST or SLURM_CLUSTER_NAME containing 'perlmutter'"},
           {"nid001", {{"NERSC_HOST", "cori"}}, "local", MachineEvidence::fallback, "which perlmutter shares"},
           // login* is everyone's login node.
           {"login1",
            {},
            "local",
            MachineEvidence::fallback,
            "hostname 'login1' starts with 'login', which frontier and perlmutter share with other sites"},
           {"login01",
            {{"SLURM_CLUSTER_NAME", "frontier"}},
            "frontier",
            MachineEvidence::signal,
            "starts with 'login' and SLURM_CLUSTER_NAME contains 'frontier'"},
           {"login01",
            {{"LMOD_SYSTEM_NAME", "frontier"}},
            "frontier",
            MachineEvidence::signal,
            "LMOD_SYSTEM_NAME contains 'frontier'"},
           // The signal alone, on a host without the prefix, decides nothing.
           {"myworkstation",
            {{"NERSC_HOST", "perlmutter"}},
            "local",
            MachineEvidence::fallback,
            "no machine profile matches"},
           // Signals compare case-insensitively.
           {"NID001234", {{"NERSC_HOST", "Perlmutter"}}, "perlmutter", MachineEvidence::signal, "NERSC_HOST"},
       }) {
    INFO(c.host << " " << (c.vars.empty() ? std::string("(no signal)") : c.vars.begin()->first));
    auto env = ezpz::test::make_env(c.vars, c.host);
    auto m = set.identify(env);
    CHECK(m.profile->name == c.machine);
    CHECK(m.how == c.how);
    CHECK_THAT(m.reason, Catch::Contains(c.reason));
  }
}

TEST_CASE("expand_machine_value fills {uid} and {job_id} only", "[machine]") {
  using ezpz::core::expand_machine_value;
  auto env = ezpz::test::make_env({{"SLURM_JOB_ID", "4242"}}, "h", 1001);
  CHECK(expand_machine_value("/tmp/miopen-cache-{uid}-{job_id}", env) == "/tmp/miopen-cache-1001-4242");
  CHECK(expand_machine_value("{other} {uid", env) == "{other} {uid");
  CHECK(expand_machine_value("", env).empty());
  auto pbs = ezpz::test::make_env({{"PBS_JOBID", "88.aurora-pbs-0001.hostmgmt"}}, "h", 7);
  CHECK(expand_machine_value("{job_id}", pbs) == "88");
  auto odd = ezpz::test::make_env({{"SLURM_JOB_ID", "1/../$(x)"}}, "h", 7);
  CHECK(expand_machine_value("/tmp/c-{job_id}", odd) == "/tmp/c-1_");
  auto odd2 = ezpz::test::make_env({{"SLURM_JOB_ID", "a b;$x"}}, "h", 7);
  CHECK(expand_machine_value("{job_id}", odd2) == "a_b__x");
  CHECK(expand_machine_value("{job_id}", ezpz::test::make_env({}, "h")) == "nojob");
}

TEST_CASE("built-in profiles carry the launch facts", "[machine]") {
  auto set = ezpz::test::builtin_machines();
  const auto* aurora = set.find("aurora");
  REQUIRE(aurora != nullptr);
  CHECK(aurora->launcher == "mpiexec");
  CHECK(aurora->style == LauncherStyle::pals);
  CHECK(aurora->gpus_per_node == 12);
  CHECK(aurora->cpu_bind == "list:1-8:9-16:17-24:25-32:33-40:41-48:53-60:61-68:69-76:77-84:85-92:93-100");
  CHECK(set.find("polaris")->cpu_bind == "depth");
  CHECK(set.find("polaris")->depth == 8);
  CHECK(set.find("sophia")->style == LauncherStyle::sophia);
  CHECK(set.find("frontier")->gpus_per_node == 8);
  CHECK(set.find("perlmutter")->style == LauncherStyle::srun);
  CHECK(set.find("local")->launcher == "auto");
  CHECK(set.find("AURORA") == aurora);
  CHECK(set.find("nowhere") == nullptr);
}

TEST_CASE("builtin_machine_names matches the embedded TOML", "[machine]") {
  auto names = ezpz::test::builtin_machines().names();
  std::vector<std::string> listed(ezpz::core::builtin_machine_names().begin(),
                                  ezpz::core::builtin_machine_names().end());
  CHECK(names == listed);
}

TEST_CASE("user config adds machines first and overrides keys of known ones", "[machine]") {
  auto set = ezpz::test::builtin_machines();
  auto r = set.merge_toml(R"(
[[machine]]
name = "mycluster"
match_prefix = ["mc-", "X9"]
scheduler = "slurm"
launcher = "srun"
style = "srun"
gpus_per_node = 2
[machine.env]
FOO = "bar"

[[machine]]
name = "aurora"
cpu_bind = "--cpu-bind=depth"
depth = 16
)",
                          "config.toml");
  REQUIRE(r);
  CHECK(set.identify(ezpz::test::make_env({}, "mc-n001")).profile->name == "mycluster");
  CHECK(set.identify(ezpz::test::make_env({}, "x9001")).profile->name == "mycluster");
  CHECK(set.names().front() == "mycluster");
  const auto* mc = set.find("mycluster");
  CHECK(mc->gpus_per_node == 2);
  REQUIRE(mc->env.size() == 1);
  CHECK(mc->env[0] == std::pair<std::string, std::string>{"FOO", "bar"});
  const auto* aurora = set.find("aurora");
  CHECK(aurora->cpu_bind == "depth");
  CHECK(aurora->depth == 16);
  CHECK(aurora->gpus_per_node == 12);  // untouched keys keep their built-in values
  CHECK(set.identify(ezpz::test::make_env({}, "x4105c0s4b0n0")).profile->name == "aurora");
}

TEST_CASE("user config sets the detection and at-scale keys", "[machine]") {
  auto set = ezpz::test::builtin_machines();
  auto r = set.merge_toml(R"(
[[machine]]
name = "lumi"
shared_prefix = ["NID"]
match_env = { SLURM_CLUSTER_NAME = "LUMI" }
at_scale_nodes = 2
[machine.env_at_scale]
BIG = "1"

[[machine]]
name = "perlmutter"
guess_from_prefix = true
[machine.env]
NCCL_NET_GDR_LEVEL = "PHB"
)",
                          "config.toml");
  REQUIRE(r);
  const auto* lumi = set.find("lumi");
  CHECK(lumi->shared_prefix == std::vector<std::string>{"nid"});
  CHECK(lumi->match_env == std::vector<std::pair<std::string, std::string>>{{"SLURM_CLUSTER_NAME", "lumi"}});
  CHECK(lumi->at_scale_nodes == 2);
  CHECK(lumi->env_at_scale == std::vector<std::pair<std::string, std::string>>{{"BIG", "1"}});
  auto on_lumi = set.identify(ezpz::test::make_env({{"SLURM_CLUSTER_NAME", "lumi"}}, "nid001"));
  CHECK(on_lumi.profile->name == "lumi");
  CHECK(on_lumi.how == MachineEvidence::signal);
  // The user made Perlmutter a guess on its shared prefixes; its match_env is untouched.
  auto guess = set.identify(ezpz::test::make_env({}, "nid001"));
  CHECK(guess.profile->name == "perlmutter");
  CHECK(guess.how == MachineEvidence::guessed);
  CHECK(set.identify(ezpz::test::make_env({{"NERSC_HOST", "perlmutter"}}, "nid001")).how == MachineEvidence::signal);
  CHECK(set.find("perlmutter")->env == std::vector<std::pair<std::string, std::string>>{
                                           {"FI_MR_CACHE_MONITOR", "userfaultfd"}, {"NCCL_NET_GDR_LEVEL", "PHB"}});
}

TEST_CASE("built-in site settings: Aurora above 16 nodes, Frontier always, Perlmutter none", "[machine]") {
  auto set = ezpz::test::builtin_machines();
  const auto* aurora = set.find("aurora");
  CHECK(aurora->at_scale_nodes == 16);
  auto has = [](const auto& list, const std::string& name, const std::string& value) {
    return std::find(list.begin(), list.end(), std::pair<std::string, std::string>{name, value}) != list.end();
  };
  CHECK(has(aurora->env_at_scale, "FI_CXI_DEFAULT_CQ_SIZE", "131072"));
  CHECK(has(aurora->env_at_scale, "FI_CXI_OFLOW_BUF_SIZE", "8388608"));
  CHECK(has(aurora->env_at_scale, "FI_CXI_CQ_FILL_PERCENT", "20"));
  CHECK(has(aurora->env_at_scale, "CCL_KVS_MODE", "mpi"));
  CHECK(has(aurora->env_at_scale, "CCL_KVS_CONNECTION_TIMEOUT", "600"));
  CHECK(has(aurora->env_at_scale, "CCL_CONFIGURATION_PATH", ""));
  const auto* frontier = set.find("frontier");
  CHECK(frontier->at_scale_nodes == 0);
  CHECK(has(frontier->env, "NCCL_SOCKET_IFNAME", "hsn0"));
  CHECK(has(frontier->env, "MIOPEN_USER_DB_PATH", "/tmp/miopen-cache-{uid}-{job_id}"));
  CHECK(has(frontier->env, "MIOPEN_CUSTOM_CACHE_DIR", "/tmp/miopen-cache-{uid}-{job_id}"));
  CHECK(set.find("perlmutter")->env ==
        std::vector<std::pair<std::string, std::string>>{{"FI_MR_CACHE_MONITOR", "userfaultfd"}});
  CHECK(set.find("perlmutter")->env_at_scale.empty());
}

TEST_CASE("a table header starting with a non-key character is a syntax error, not an abort (fuzz finding)",
          "[machine]") {
  // toml++ 3.3.0 asserted on these in debug builds (ezpz died with SIGABRT, exit 134).
  for (const char* text : {"[[,\n", "[a.,\n", "[[machine]]\nname = \"a\"\n[[, or auto\n", "[.\n"}) {
    INFO(text);
    auto set = ezpz::test::builtin_machines();
    auto r = set.merge_toml(text, "config.toml");
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ezpz::ExitCode::usage);
    CHECK_THAT(r.error().message, Catch::Contains("config.toml:"));
    CHECK_FALSE(ezpz::core::yeet_settings_from_toml(text, "config.toml"));
  }
}

TEST_CASE("a bad config names the file, the line and the key", "[machine]") {
  struct Case {
    const char* text;
    const char* expect;
  };
  for (auto [text, expect] : {
           Case{"[[machine]]\nname = \"a\"\nlancher = \"srun\"\n",
                "config.toml:3: key 'lancher' is not a machine setting (did you mean 'launcher'?)"},
           Case{"[[machine]]\nname = \"a\"\nlauncher = \"srunx\"\n",
                "config.toml:3: key 'launcher' must be auto, mpiexec, mpirun, srun or a launcher's path, not "
                "\"srunx\" (did you mean 'srun'?)"},
           Case{"[[machine]]\nname = \"a\"\nlauncher = \"\"\n", "config.toml:3: key 'launcher' must be auto"},
           Case{"[[machine]]\nname = \"a\"\nmodules = \"yes\"\n", "config.toml:3: key 'modules' must be true or false"},
           Case{"[[machine]]\nname = \"a\"\nnet_plugin = \"libnccl-net\"\n",
                "config.toml:3: key 'net_plugin' must be a list"},
           Case{"[[machine]]\nname = \"a\"\ngpus_per_node = \"four\"\n",
                "config.toml:3: key 'gpus_per_node' must be a whole number"},
           Case{"[[machine]]\nname = \"a\"\nstyle = \"lsf\"\n", "config.toml:3: key 'style' must be one of"},
           Case{"[[machine]]\nname = \"a\"\nscheduler = \"lsf\"\n", "config.toml:3: key 'scheduler' must be"},
           Case{"[[machine]]\nname = \"a\"\nmatch_prefix = \"x4\"\n",
                "config.toml:3: key 'match_prefix' must be a list"},
           Case{"[[machine]]\ndescription = \"no name\"\n", "config.toml:1: [[machine]] needs a name"},
           Case{"[[machine]]\nname = \"a\"\n[machine.env]\nX = 1\n", "config.toml:4: key 'env.X' must be a string"},
           Case{"machines = 3\n", "config.toml:1: key 'machines' is not a top-level setting"},
           Case{"[[machine]]\nname = \"a\"\nshared_prefix = [\"\"]\n",
                "config.toml:3: key 'shared_prefix' must hold only non-empty strings"},
           Case{"[[machine]]\nname = \"a\"\nmatch_env = { NERSC_HOST = \"\" }\n",
                "config.toml:3: key 'match_env.NERSC_HOST' must be non-empty text"},
           Case{"[[machine]]\nname = \"a\"\nmatch_env = [\"NERSC_HOST\"]\n",
                "config.toml:3: key 'match_env' must be a table"},
           Case{"[[machine]]\nname = \"a\"\nguess_from_prefix = \"yes\"\n",
                "config.toml:3: key 'guess_from_prefix' must be true or false"},
           Case{"[[machine]]\nname = \"a\"\nat_scale_nodes = -1\n",
                "config.toml:3: key 'at_scale_nodes' must be a whole number"},
           Case{"[[machine]]\nname = \"a\"\n[machine.env_at_scale]\nX = 1\n",
                "config.toml:4: key 'env_at_scale.X' must be a string"},
           Case{"[[machine]\nname = 1\n", "config.toml:1:"},
       }) {
    INFO(text);
    auto set = ezpz::test::builtin_machines();
    auto r = set.merge_toml(text, "config.toml");
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ezpz::ExitCode::usage);
    CHECK_THAT(r.error().message, Catch::Contains(expect));
  }
}
