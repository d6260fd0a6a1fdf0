// yeet's launcher transport, planned: the transport chosen (and why), the launcher step that
// starts the agents in each dialect, the agents' directory, and what an agent runs.
#include <catch2/catch.hpp>

#include "core/base/shell.hpp"
#include "core/reach/agents.hpp"
#include "core/yeet/relay_args.hpp"
#include "fake_probe.hpp"

using namespace ezpz::core;
using ezpz::test::FakeProbe;
using ezpz::test::make_env;

namespace {

/// plan_reach in a job of `scheduler` ("slurm", "pbs" or none) on hosts n0..n3, run on n0.
ezpz::Expected<NodeReach> reach(const std::string& scheduler, TransportRequest request, FakeProbe probe = {}) {
  std::map<std::string, std::string, std::less<>> vars = {{"EZPZ_MACHINE", "local"}};
  if (scheduler == "slurm") {
    vars.emplace("SLURM_JOB_ID", "7");
    vars.emplace("SLURM_NODELIST", "n[0-3]");
  } else if (scheduler == "pbs") {
    vars.emplace("PBS_JOBID", "7.pbs");
    vars.emplace("PBS_NODEFILE", "/pbs/nodefile");
    probe.files["/pbs/nodefile"] = "n0\nn1\nn2\nn3\n";
  }
  auto env = make_env(vars, "n0");
  env.self_exe = "/opt/ezpz";
  return plan_reach(env, probe, "", HsnNames::prefer, request);
}

}  // namespace

TEST_CASE("choose_transport: auto takes the job's launcher, else SSH, launcher outside a job is refused", "[agents]") {
  FakeProbe probe;
  probe.programs["srun"] = "/usr/bin/srun";
  auto r = reach("slurm", TransportRequest::automatic, probe);
  REQUIRE(r);
  CHECK(r->choice.kind == TransportKind::launcher);
  CHECK(r->choice.why == "auto: slurm job, agents started by srun (srun)");
  CHECK(r->targets == HostList{"n1", "n2", "n3"});  // no -hsn0 names: the agents say their addresses
  CHECK(shell_join(r->agent_step) ==
        "srun --overlap --quiet --input=none --chdir=/ --kill-on-bad-exit=0 --export=ALL -N3 -n3 --ntasks-per-node=1 "
        "--nodelist=n1,n2,n3 /opt/ezpz __yeet-agent");
  CHECK(r->agent_head == "n0");

  // No job: SSH, and why.
  auto none = reach("", TransportRequest::automatic, probe);
  REQUIRE(none);
  CHECK(none->choice.kind == TransportKind::ssh);
  CHECK_THAT(none->choice.why, Catch::StartsWith("auto: no PBS or Slurm job here"));
  CHECK(none->agent_step.empty());
  // A Slurm job without srun on PATH: SSH under auto, a usage error when asked for.
  auto no_srun = reach("slurm", TransportRequest::automatic);
  REQUIRE(no_srun);
  CHECK(no_srun->choice.kind == TransportKind::ssh);
  auto asked = reach("slurm", TransportRequest::launcher);
  REQUIRE_FALSE(asked);
  CHECK(asked.error().code == ezpz::ExitCode::usage);
  CHECK_THAT(asked.error().message, Catch::Contains("--transport launcher") && Catch::Contains("--transport ssh"));
  auto outside = reach("", TransportRequest::launcher, probe);
  REQUIRE_FALSE(outside);
  CHECK_THAT(outside.error().message, Catch::Contains("no PBS or Slurm job here"));
  // ssh asked: SSH even in a job.
  auto ssh = reach("slurm", TransportRequest::ssh, probe);
  REQUIRE(ssh);
  CHECK(ssh->choice.kind == TransportKind::ssh);
}

TEST_CASE("transport_request: --transport, then --ssh-command, then [yeet] transport, else auto", "[agents]") {
  FakeProbe probe;
  probe.programs["srun"] = "/usr/bin/srun";
  probe.files["/cfg.toml"] = "[yeet]\ntransport = \"ssh\"\n";
  auto env = make_env({{"EZPZ_CONFIG", "/cfg.toml"}});
  auto from_config = transport_request("", "", env, probe);
  REQUIRE(from_config);
  CHECK(from_config->request == TransportRequest::ssh);
  CHECK(from_config->origin == "transport = \"ssh\" in /cfg.toml");
  auto flag = transport_request("launcher", "", env, probe);  // the flag wins
  REQUIRE(flag);
  CHECK(flag->request == TransportRequest::launcher);
  CHECK(flag->origin == "--transport launcher");
  CHECK(transport_request("auto", "", env, probe)->request == TransportRequest::automatic);
  CHECK(transport_request("auto", "ssh", env, probe)->request == TransportRequest::ssh);  // as before
  CHECK(transport_request("launcher", "ssh", env, probe)->request == TransportRequest::launcher);
  auto ssh_command = transport_request("", "ssh", make_env({}), probe);
  CHECK(ssh_command->request == TransportRequest::ssh);
  CHECK(ssh_command->origin == "--ssh-command");
  CHECK(transport_request("", "", make_env({}), probe)->request == TransportRequest::automatic);
  // The config's choice is said where the plan says why.
  probe.files["/cfg.toml"] = "[yeet]\ntransport = \"launcher\"\n";
  auto job = make_env(
      {{"EZPZ_CONFIG", "/cfg.toml"}, {"EZPZ_MACHINE", "local"}, {"SLURM_JOB_ID", "7"}, {"SLURM_NODELIST", "n[0-3]"}},
      "n0");
  auto ask = transport_request("", "", job, probe);
  REQUIRE(ask);
  auto r = plan_reach(job, probe, "", HsnNames::prefer, *ask);
  REQUIRE(r);
  CHECK(r->choice.why == "transport = \"launcher\" in /cfg.toml: slurm job, agents started by srun (srun)");
  // Outside a job: nothing to reach (a copy here only) is fine; other nodes are refused.
  auto alone = plan_reach(make_env({{"EZPZ_MACHINE", "local"}}, "n0"), probe, "", HsnNames::prefer, *ask);
  REQUIRE(alone);
  CHECK(alone->targets.empty());
  probe.files["/h"] = "n0\nn1\nn2\n";
  auto outside = plan_reach(make_env({{"EZPZ_MACHINE", "local"}}, "n0"), probe, "/h", HsnNames::prefer, *ask);
  REQUIRE_FALSE(outside);
  CHECK_THAT(outside.error().message, Catch::StartsWith("transport = \"launcher\" in /cfg.toml: no PBS or Slurm job"));
  // A bad value: the file, the line, the key and what it may be.
  probe.files["/cfg.toml"] = "[yeet]\ntransport = \"scp\"\n";
  auto bad = transport_request("", "", env, probe);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ezpz::ExitCode::usage);
  CHECK_THAT(bad.error().message, Catch::Contains("/cfg.toml:2") && Catch::Contains("'transport'") &&
                                      Catch::Contains("\"auto\", \"launcher\", \"ssh\""));
}

TEST_CASE("srun ships a binary that lives on a node-local filesystem, not one on a shared path", "[agents]") {
  CHECK(node_local_binary("/tmp/ezpz"));
  CHECK(node_local_binary("/dev/shm/me/ezpz"));
  CHECK_FALSE(node_local_binary("/home/me/bin/ezpz"));
  CHECK_FALSE(node_local_binary("/tmpfoo/ezpz"));
  const auto argv = agent_step_argv(LauncherChoice{"srun", LauncherStyle::srun, std::nullopt}, {"n1"}, "", "/tmp/ezpz",
                                    {.as_root = false, .ship = true});
  CHECK(shell_join(argv) ==
        "srun --overlap --quiet --input=none --chdir=/ --kill-on-bad-exit=0 --export=ALL --bcast=/tmp/ -N1 -n1 "
        "--ntasks-per-node=1 --nodelist=n1 /tmp/ezpz __yeet-agent");
}

TEST_CASE("the agent step in each launcher's dialect", "[agents]") {
  const HostList hosts = {"x1", "x2"};
  auto step = [&](const std::string& program, LauncherStyle style, bool root = false) {
    return shell_join(agent_step_argv(LauncherChoice{program, style, std::nullopt}, hosts, "/pbs/nodefile", "/opt/ezpz",
                                      {.as_root = root}));
  };
  CHECK(step("mpiexec", LauncherStyle::pals) ==
        "mpiexec --envall --np=2 --ppn=1 --hostfile=/pbs/nodefile /opt/ezpz __yeet-agent");
  CHECK(step("mpiexec", LauncherStyle::mpich) == "mpiexec -n 2 -ppn 1 -f /pbs/nodefile /opt/ezpz __yeet-agent");
  // Open MPI carries only what it is told to: the secret and the head's address, by name.
  CHECK(step("mpirun", LauncherStyle::openmpi, true) ==
        "mpirun -np 2 --hostfile /pbs/nodefile --map-by ppr:1:node --allow-run-as-root -x EZPZ_YEET_SECRET -x "
        "EZPZ_YEET_HEAD /opt/ezpz __yeet-agent");
}

TEST_CASE("plan_reach in a PBS job: mpiexec on every host of the job's hostfile", "[agents]") {
  FakeProbe probe;
  probe.programs["mpiexec"] = "/usr/bin/mpiexec";
  probe.links["/usr/bin/mpiexec"] = "/usr/bin/mpiexec.mpich";
  auto r = reach("pbs", TransportRequest::automatic, probe);
  REQUIRE(r);
  CHECK(r->choice.kind == TransportKind::launcher);
  CHECK(r->targets == HostList{"n1", "n2", "n3"});
  // n0's own agent hears it is not a target and ends
  CHECK(shell_join(r->agent_step) == "mpiexec -n 4 -ppn 1 -f /pbs/nodefile /opt/ezpz __yeet-agent");
}

TEST_CASE("the agents' directory and who an agent is", "[agents]") {
  const AgentDirectory d = {{"n1", "10.0.0.1:4000"}, {"n2", "10.0.0.2:4001"}};
  CHECK(encode_directory(d) == "n1=10.0.0.1:4000,n2=10.0.0.2:4001");
  auto back = decode_directory(encode_directory(d));
  REQUIRE(back);
  CHECK(*back == d);
  CHECK(decode_directory("")->empty());
  CHECK_FALSE(decode_directory("n1"));
  CHECK_FALSE(decode_directory("=10.0.0.1:1"));
  CHECK_FALSE(decode_directory("n1="));

  const HostList targets = {"x1000c0s0b0n0", "nid0002.cluster"};
  CHECK(match_agent({"x1000c0s0b0n0"}, targets) == "x1000c0s0b0n0");
  CHECK(match_agent({"", "x1000c0s0b0n0.hostmgmt.site"}, targets) == "x1000c0s0b0n0");  // short names agree
  CHECK(match_agent({"nid0002"}, targets) == "nid0002.cluster");
  CHECK_FALSE(match_agent({"login1"}, targets));
  CHECK_FALSE(match_agent({}, targets));
}

TEST_CASE("an agent runs yeet's node halves only", "[agents]") {
  CHECK(agent_may_run({"__yeet-relay", "--dst", "/tmp/x"}));
  CHECK(agent_may_run({"__yeet-send", "--dst", "/tmp/x"}));
  CHECK(agent_may_run({"__doctor-node"}));
  CHECK(agent_may_run({"kill", "--json"}));
  CHECK_FALSE(agent_may_run({}));
  CHECK_FALSE(agent_may_run({"launch", "--", "rm", "-rf", "/"}));
  CHECK_FALSE(agent_may_run({"__yeet-agent"}));
  CHECK_FALSE(agent_may_run({"sh", "-c", "id"}));
}

TEST_CASE("relays are told the transport and --no-encrypt, and refuse a transport they do not know", "[agents]") {
  BroadcastSpec spec;
  spec.destination = "/tmp/env";
  spec.reach.transport = TransportKind::launcher;
  spec.reach.encrypt = false;
  const auto argv = to_argv(passed_down(spec));
  auto args = parse_relay_args(argv);
  REQUIRE(args);
  const auto back = spec_from(*args, "/opt/ezpz");
  CHECK(back.reach.transport == TransportKind::launcher);
  CHECK_FALSE(back.reach.encrypt);
  spec.reach.transport = TransportKind::ssh;
  spec.reach.encrypt = true;
  const auto plain = spec_from(*parse_relay_args(to_argv(passed_down(spec))), "/opt/ezpz");
  CHECK(plain.reach.transport == TransportKind::ssh);
  CHECK(plain.reach.encrypt);
  auto bad = parse_relay_args({"--dst", "/tmp/x", "--children", "", "--transport", "pigeon"});
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("--transport pigeon"));
}

TEST_CASE("plan_reach over SSH: the job's hosts less this node, -hsn0 names when asked", "[agents]") {
  FakeProbe probe;
  probe.files["/pbs/nf"] = "x1.a\nx2.a\nx1.a\nx3.a\n";
  auto env = make_env({{"PBS_JOBID", "1.a"}, {"PBS_NODEFILE", "/pbs/nf"}, {"EZPZ_MACHINE", "local"}}, "x2");
  auto others = plan_reach(env, probe, "", HsnNames::never, TransportRequest::ssh);
  REQUIRE(others);
  CHECK(others->targets == HostList{"x1.a", "x3.a"});
  probe.resolvable.insert("x3-hsn0");
  CHECK(plan_reach(env, probe, "", HsnNames::prefer, TransportRequest::ssh)->targets == HostList{"x1.a", "x3-hsn0"});
  probe.files["/h"] = "y1\ny2\n";
  CHECK(plan_reach(env, probe, "/h", HsnNames::never, TransportRequest::ssh)->targets == HostList{"y1", "y2"});
  auto missing = plan_reach(env, probe, "/nope", HsnNames::never, TransportRequest::ssh);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message.find("/nope") != std::string::npos);
}
