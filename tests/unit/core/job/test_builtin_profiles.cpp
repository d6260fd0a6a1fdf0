// builtin_profiles() (src/core/job/builtin_profiles.cpp, data) against machines.toml as the parser
// reads it. With EZPZ_WRITE_BUILTIN_PROFILES=PATH the test writes the data source afresh to PATH
// (scripts/gen-builtin-machines.sh).
#include <catch2/catch.hpp>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/job/machine.hpp"

using namespace ezpz::core;

namespace {

std::string quoted(const std::string& s) {
  return "R\"ezpz(" + s + ")ezpz\"";
}

std::string list(const std::vector<std::string>& v) {
  std::string out = "{";
  for (const auto& s : v) {
    out += (out.size() > 1 ? ", " : "") + quoted(s);
  }
  return out + "}";
}

std::string pairs(const std::vector<std::pair<std::string, std::string>>& v) {
  std::string out = "{";
  for (const auto& [k, value] : v) {
    out += (out.size() > 1 ? ", {" : "{") + quoted(k) + ", " + quoted(value) + "}";
  }
  return out + "}";
}

/// The name of the function that builds profile `m`.
std::string function_name(const MachineProfile& m) {
  std::string out = "profile_";
  for (char c : m.name) {
    out += std::isalnum(static_cast<unsigned char>(c)) != 0 ? c : '_';
  }
  return out;
}

/// The C++ function that builds one profile: only what differs from MachineProfile{}.
std::string profile_source(const MachineProfile& m) {
  const MachineProfile d;
  std::string out = "MachineProfile " + function_name(m) + "() {\n  MachineProfile m;\n";
  auto set = [&out](const std::string& field, const std::string& value) {
    out += "  m." + field + " = " + value + ";\n";
  };
  auto str = [&](const std::string& f, const std::string& v, const std::string& dv) {
    if (v != dv) {
      set(f, quoted(v));
    }
  };
  auto num = [&](const std::string& f, long v, long dv) {
    if (v != dv) {
      set(f, std::to_string(v));
    }
  };
  auto flag = [&](const std::string& f, bool v, bool dv) {
    if (v != dv) {
      set(f, v ? "true" : "false");
    }
  };
  auto strings = [&](const std::string& f, const std::vector<std::string>& v, const std::vector<std::string>& dv) {
    if (v != dv) {
      set(f, list(v));
    }
  };
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  auto table = [&](const std::string& f, const Pairs& v, const Pairs& dv) {
    if (v != dv) {
      set(f, pairs(v));
    }
  };
  str("name", m.name, d.name);
  str("description", m.description, d.description);
  strings("match_prefix", m.match_prefix, d.match_prefix);
  str("match_contains", m.match_contains, d.match_contains);
  if (m.scheduler) {
    set("scheduler", "Scheduler::" + std::string(to_string(*m.scheduler)));
  }
  str("launcher", m.launcher, d.launcher);
  if (m.style != d.style) {
    set("style", "LauncherStyle::" + std::string(to_string(m.style)));
  }
  str("cpu_bind", m.cpu_bind, d.cpu_bind);
  num("depth", m.depth, d.depth);
  num("gpus_per_node", m.gpus_per_node, d.gpus_per_node);
  num("cpus_per_node", m.cpus_per_node, d.cpus_per_node);
  strings("launcher_args", m.launcher_args, d.launcher_args);
  strings("sched_args", m.sched_args, d.sched_args);
  str("gpu_bind", m.gpu_bind, d.gpu_bind);
  flag("gpu_reverse", m.gpu_reverse, d.gpu_reverse);
  str("master_addr_suffix", m.master_addr_suffix, d.master_addr_suffix);
  table("env", m.env, d.env);
  strings("shared_prefix", m.shared_prefix, d.shared_prefix);
  table("match_env", m.match_env, d.match_env);
  flag("guess_from_prefix", m.guess_from_prefix, d.guess_from_prefix);
  num("at_scale_nodes", m.at_scale_nodes, d.at_scale_nodes);
  num("start_timeout", m.start_timeout, d.start_timeout);
  table("env_at_scale", m.env_at_scale, d.env_at_scale);
  strings("net_plugin", m.net_plugin, d.net_plugin);
  str("net_plugin_hint", m.net_plugin_hint, d.net_plugin_hint);
  flag("modules", m.modules, d.modules);
  num("yeet_above_nodes", m.yeet_above_nodes, d.yeet_above_nodes);
  return out + "  return m;\n}\n\n";
}

std::string profiles_source(const std::vector<MachineProfile>& profiles) {
  std::string out =
      "// Written by scripts/gen-builtin-machines.sh from src/core/job/machines.toml (as merge_toml reads\n"
      "// it): do not edit. tests/unit/core/job/test_builtin_profiles.cpp fails when the two differ.\n"
      "#include \"core/job/machine.hpp\"\n\n"
      "namespace ezpz::core {\nnamespace {\n\n";
  std::string pushes;
  for (const auto& m : profiles) {
    out += profile_source(m);
    pushes += "  out.push_back(" + function_name(m) + "());\n";
  }
  // Each moved in (a braced list would copy every profile, strings and all, at each start).
  return out + "}  // namespace\n\nstd::vector<MachineProfile> builtin_profiles() {\n" +
         "  std::vector<MachineProfile> out;\n  out.reserve(" + std::to_string(profiles.size()) + ");\n" + pushes +
         "  return out;\n}\n\n}  // namespace ezpz::core\n";
}

}  // namespace

TEST_CASE("the built-in profiles are machines.toml as the parser reads it", "[builtin_profiles]") {
  auto parsed = MachineSet::builtin_parsed();
  REQUIRE(parsed);
  if (const char* path = std::getenv("EZPZ_WRITE_BUILTIN_PROFILES")) {
    std::ofstream(path) << profiles_source(parsed->profiles());
  }
  const auto data = builtin_profiles();
  REQUIRE(data.size() == parsed->profiles().size());
  for (std::size_t i = 0; i < data.size(); ++i) {
    INFO("machine " << parsed->profiles()[i].name
                    << ": src/core/job/builtin_profiles.cpp is stale, run scripts/gen-builtin-machines.sh");
    CHECK(data[i] == parsed->profiles()[i]);
  }
  auto set = MachineSet::builtin();
  REQUIRE(set);
  CHECK(set->profiles() == parsed->profiles());
}
