// Machine profiles and config TOML: MachineSet::merge_toml on fuzzed text, [yeet] allowed_roots,
// and load_machines/yeet_settings through a fake probe serving the text as $EZPZ_CONFIG.
// Properties: no crash or exception; a merged set still identifies hostnames (with and without a
// site's environment) as one of its machines and knows "local".
#include "core/job/cluster.hpp"
#include "core/job/machine.hpp"
#include "core/yeet/plan.hpp"
#include "fake_probe.hpp"
#include "fuzz_common.hpp"

using namespace ezpz;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto builtin = *core::MachineSet::builtin();
  const std::string text(fuzz::as_text(data, size));
  auto set = builtin;
  if (set.merge_toml(text, "fuzz.toml")) {
    EZPZ_FUZZ_CHECK(set.find("local") != nullptr);
    for (const char* host : {"x4102c0s0b0n0", "x1000c0s0b0n0.hostmgmt", "login01", "", "nid001234"}) {
      for (const auto& vars : {std::map<std::string, std::string, std::less<>>{},
                               {{"PBS_JOBID", "1.aurora-pbs"}, {"NERSC_HOST", "perlmutter"}}}) {
        const auto match = set.identify(test::make_env(vars, host));
        EZPZ_FUZZ_CHECK(match.profile != nullptr);
        EZPZ_FUZZ_CHECK(set.find(match.profile->name) != nullptr);
        EZPZ_FUZZ_CHECK(!match.reason.empty());
      }
    }
  }
  (void)core::yeet_settings_from_toml(text, "fuzz.toml");
  test::FakeProbe probe;
  probe.files["/etc/ezpz.toml"] = text;
  auto env = test::make_env({{"EZPZ_CONFIG", "/etc/ezpz.toml"}});
  auto loaded = core::load_machines(env, probe);
  if (loaded) {
    EZPZ_FUZZ_CHECK(!loaded->names().empty());
    auto cluster = core::discover_cluster(env, *loaded, std::nullopt, std::nullopt, probe);
    (void)cluster;
  } else {
    EZPZ_FUZZ_CHECK(!loaded.error().message.empty());
  }
  if (auto settings = core::yeet_settings(env, probe)) {
    EZPZ_FUZZ_CHECK(!settings->allowed_roots.empty());
  }
  return 0;
}
