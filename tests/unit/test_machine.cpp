#include <catch2/catch.hpp>

#include <algorithm>

#include "core/machine.hpp"
#include "fake_probe.hpp"

using ezpz::core::LauncherStyle;
using ezpz::core::MachineSet;

TEST_CASE("machine detection for each hostname family", "[machine]") {
  auto set = ezpz::test::builtin_machines();
  struct Case {
    const char* host;
    const char* machine;
  };
  for (auto [host, machine] : {
           Case{"x4105c0s4b0n0", "aurora"},
           Case{"x4105c0s4b0n0.hostmgmt2105.cm.aurora.alcf.anl.gov", "aurora"},
           Case{"aurora-uan-0010", "aurora"},
           Case{"x1002c0s3b0n0", "sunspot"},
           Case{"sunspot-uan-0001", "sunspot"},
           Case{"x3001c0s7b0n0", "polaris"},
           Case{"polaris-login-02", "polaris"},
           Case{"x3001c0s7b0n0.sirius.alcf.anl.gov", "sirius"},
           Case{"sirius-login-01", "sirius"},
           Case{"sophia-gpu-07", "sophia"},
           Case{"frontier-login01", "frontier"},
           Case{"frontier00123", "frontier"},
           Case{"nid00123", "perlmutter"},
           Case{"login01.perlmutter", "perlmutter"},
           Case{"perlmutter-login", "perlmutter"},
           Case{"X4105C0S4B0N0", "aurora"},
           Case{"myworkstation", "local"},
           Case{"", "local"},
       }) {
    INFO(host);
    CHECK(set.detect(host).name == machine);
  }
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
  CHECK(set.detect("mc-n001").name == "mycluster");
  CHECK(set.detect("x9001").name == "mycluster");
  CHECK(set.names().front() == "mycluster");
  const auto* mc = set.find("mycluster");
  CHECK(mc->gpus_per_node == 2);
  REQUIRE(mc->env.size() == 1);
  CHECK(mc->env[0] == std::pair<std::string, std::string>{"FOO", "bar"});
  const auto* aurora = set.find("aurora");
  CHECK(aurora->cpu_bind == "depth");
  CHECK(aurora->depth == 16);
  CHECK(aurora->gpus_per_node == 12);  // untouched keys keep their built-in values
  CHECK(set.detect("x4105c0s4b0n0").name == "aurora");
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
    CHECK_FALSE(ezpz::core::yeet_roots_from_toml(text, "config.toml"));
  }
}

TEST_CASE("a bad config names the file, the line and the key", "[machine]") {
  struct Case {
    const char* text;
    const char* expect;
  };
  for (auto [text, expect] : {
           Case{"[[machine]]\nname = \"a\"\nlancher = \"srun\"\n",
                "config.toml:3: key 'lancher' is not a machine setting"},
           Case{"[[machine]]\nname = \"a\"\ngpus_per_node = \"four\"\n",
                "config.toml:3: key 'gpus_per_node' must be a whole number"},
           Case{"[[machine]]\nname = \"a\"\nstyle = \"lsf\"\n", "config.toml:3: key 'style' must be one of"},
           Case{"[[machine]]\nname = \"a\"\nscheduler = \"lsf\"\n", "config.toml:3: key 'scheduler' must be"},
           Case{"[[machine]]\nname = \"a\"\nmatch_prefix = \"x4\"\n",
                "config.toml:3: key 'match_prefix' must be a list"},
           Case{"[[machine]]\ndescription = \"no name\"\n", "config.toml:1: [[machine]] needs a name"},
           Case{"[[machine]]\nname = \"a\"\n[machine.env]\nX = 1\n", "config.toml:4: key 'env.X' must be a string"},
           Case{"machines = 3\n", "config.toml:1: key 'machines' is not a top-level setting"},
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
