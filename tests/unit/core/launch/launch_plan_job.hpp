// What the launch-plan tests share: a job in an allocation on a built-in machine, its plan and
// its launcher line.
#pragma once

#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "core/base/shell.hpp"
#include "core/launch/launch_plan.hpp"
#include "fake_probe.hpp"

namespace ezpz::test {

using namespace ezpz::core;

inline const std::string kAuroraBind = "list:1-8:9-16:17-24:25-32:33-40:41-48:53-60:61-68:69-76:77-84:85-92:93-100";

struct Job {
  std::string machine;
  int nhosts = 1;
  std::map<std::string, std::string, std::less<>> extra_env;
  LaunchRequest request;
  LauncherInventory inventory;
  unsigned uid = 1000;
  bool rank_env = false;  ///< the golden lines show the launcher's part; the shim is tested apart
  std::string config;     ///< the user's config.toml, merged over the built-in machines
};

/// The job's environment and what discover_cluster finds for it.
struct JobSetting {
  Env env;
  ClusterInfo cluster;
};

/// A job inside a PBS (or Slurm) allocation of `nhosts` hosts on `machine`.
inline JobSetting setting(Job& job) {
  FakeProbe probe;
  auto set = MachineSet::builtin();
  REQUIRE(set);
  REQUIRE(set->merge_toml(job.config, "config.toml"));
  const auto* m = set->find(job.machine);
  REQUIRE(m != nullptr);
  auto vars = job.extra_env;
  std::string nodes;
  for (int i = 0; i < job.nhosts; ++i) {
    nodes += "host" + std::to_string(i) + "\n";
  }
  if (m->scheduler == Scheduler::slurm) {
    vars.emplace("SLURM_JOB_ID", "7");
    vars.emplace("SLURM_NODELIST", "host[0-" + std::to_string(job.nhosts - 1) + "]");
  } else if (m->scheduler == Scheduler::pbs) {
    vars.emplace("PBS_JOBID", "7.pbs");
    vars.emplace("PBS_NODEFILE", "/pbs/nodefile");
    probe.files["/pbs/nodefile"] = nodes;
  }
  if (job.request.hostfile) {
    probe.files[*job.request.hostfile] = nodes;
  }
  if (job.request.command.empty()) {
    job.request.command = {"python3", "-m", "app.train"};
  }
  job.request.rank_env = job.rank_env;
  auto env = make_env(vars, "host0", job.uid);
  env.self_exe = "/opt/ezpz/bin/ezpz";
  auto cluster = discover_cluster(env, *set, job.machine, job.request.hostfile, probe);
  REQUIRE(cluster);
  return {env, *cluster};
}

inline ezpz::Expected<LaunchPlan> plan(Job job) {
  const auto s = setting(job);
  return plan_launch(job.request, s.env, s.cluster, job.inventory);
}

inline std::string line(Job job) {
  auto p = plan(std::move(job));
  INFO((p ? "" : p.error().message));
  REQUIRE(p);
  return shell_join(p->argv);
}

inline LauncherInventory openmpi() {
  return {std::nullopt, LauncherProgram{"mpirun", "/usr/bin/mpirun", LauncherStyle::openmpi}, std::nullopt};
}

}  // namespace ezpz::test
