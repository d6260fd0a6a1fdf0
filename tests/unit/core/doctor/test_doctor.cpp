#include <catch2/catch.hpp>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/doctor/doctor.hpp"
#include "core/doctor/python_answers.hpp"
#include "core/reach/transport.hpp"
#include "core/yeet/outcome.hpp"
#include "fake_probe.hpp"

using namespace ezpz;
using core::CheckStatus;
using test::FakeProbe;
using test::make_env;

namespace {

const char* kMounts =
    "/dev/sda1 / ext4 rw,relatime 0 0\n"
    "tmpfs /tmp tmpfs rw 0 0\n"
    "10.0.0.1:/home /home nfs4 rw 0 0\n"
    "lustre@o2ib:/flare /lus/flare lustre rw 0 0\n"
    "/dev/sdb1 /my\\040disk xfs rw 0 0\n";

core::LocalFacts facts_for(const core::Env& env, FakeProbe& probe, std::optional<std::string> hostfile = {}) {
  probe.files["/proc/self/mounts"] = kMounts;
  return core::gather_local_facts(env, probe, hostfile, std::nullopt, "0.1.0");
}

core::NodeReply answered(const std::string& host, long long skew_ns, unsigned long long free, bool same = true) {
  core::NodeReply r;
  r.host = host;
  r.ready = true;
  r.start_ns = 1'000'000'000;
  r.ready_ns = 1'100'000'000;
  r.ping_ns = 1'100'000'000;
  r.reply_ns = 1'102'000'000;
  core::NodeFacts f;
  f.hostname = host;
  f.time_ns = 1'101'000'000 + skew_ns;
  f.dst = "/tmp";
  f.dst_free = free;
  f.version = "0.1.0";
  f.exe_present = true;
  f.exe_same = same;
  r.reply = core::encode_node_facts(f);
  r.exit_code = 0;
  return r;
}

}  // namespace

TEST_CASE("doctor: mount table, the mount holding a path, shared filesystems", "[doctor]") {
  const auto mounts = core::parse_mounts(kMounts);
  REQUIRE(mounts.size() == 5);
  CHECK(mounts[4].point == "/my disk");
  CHECK(core::mount_of(mounts, "/lus/flare/projects/env")->type == "lustre");
  CHECK(core::mount_of(mounts, "/lus/flareX")->type == "ext4");
  CHECK(core::mount_of(mounts, "/home")->type == "nfs4");
  CHECK(core::mount_of(mounts, "/my disk/venv")->type == "xfs");
  CHECK(core::is_shared_fs("lustre"));
  CHECK(core::is_shared_fs("nfs4"));
  CHECK(core::is_shared_fs("gpfs"));
  CHECK_FALSE(core::is_shared_fs("ext4"));
  CHECK_FALSE(core::is_shared_fs("tmpfs"));
}

TEST_CASE("doctor: a venv on Lustre suggests yeet above the machine's node count and names its base interpreter",
          "[doctor]") {
  FakeProbe probe;
  auto env = make_env({{"VIRTUAL_ENV", "/lus/flare/me/venv"}});
  probe.files["/lus/flare/me/venv/pyvenv.cfg"] = "home = /usr/bin\ninclude-system-site-packages = false\n";
  probe.files["/proc/self/mounts"] = kMounts;
  std::string hosts;
  for (int i = 0; i < 17; ++i) {
    hosts += "x4102c0s" + std::to_string(i) + "b0n0\n";
  }
  probe.files["/h/17"] = hosts;
  // 17 Aurora nodes (its yeet_above_nodes is 16): an import storm.
  auto r = core::check_python(env, probe, core::gather_local_facts(env, probe, "/h/17", "aurora", "0.1.0"));
  CHECK(r.status == CheckStatus::warning);
  CHECK_THAT(r.message, Catch::Contains("lustre") && Catch::Contains("each of the job's 17 nodes imports from it") &&
                            Catch::Contains("/usr/bin (ext4)"));
  CHECK_THAT(r.remedy, Catch::Contains("ezpz yeet"));
  // One node: fine, with the number that would change it.
  auto one = core::check_python(env, probe, facts_for(env, probe));
  CHECK(one.status == CheckStatus::ok);
  CHECK_THAT(one.message, Catch::Contains("shared), fine for 1 node; above 16, ezpz yeet it"));

  auto local = make_env({{"VIRTUAL_ENV", "/tmp/venv"}});
  auto ok = core::check_python(local, probe, facts_for(local, probe));
  CHECK(ok.status == CheckStatus::ok);
  CHECK_THAT(ok.message, Catch::Contains("tmpfs"));
}

TEST_CASE("doctor: Slurm variables that disagree are an error, a hostfile outside the allocation too", "[doctor]") {
  FakeProbe probe;
  auto env = make_env({{"SLURM_JOB_ID", "77"}, {"SLURM_NODELIST", "nid[001-003]"}, {"SLURM_NNODES", "4"}});
  auto r = core::check_scheduler(env, probe, facts_for(env, probe));
  CHECK(r.status == CheckStatus::error);
  CHECK_THAT(r.message, Catch::Contains("3 hosts but SLURM_NNODES=4"));

  auto consistent = make_env({{"SLURM_JOB_ID", "77"}, {"SLURM_NODELIST", "nid[001-003]"}, {"SLURM_NNODES", "3"}});
  CHECK(core::check_scheduler(consistent, probe, facts_for(consistent, probe)).status == CheckStatus::ok);

  probe.files["/h/outside"] = "nid001\nnid009\n";
  auto outside = core::check_scheduler(consistent, probe, facts_for(consistent, probe, "/h/outside"));
  CHECK(outside.status == CheckStatus::error);
  CHECK_THAT(outside.message, Catch::Contains("nid009"));

  probe.files["/h/subset"] = "nid001.cluster\nnid002\n";
  auto subset = core::check_scheduler(consistent, probe, facts_for(consistent, probe, "/h/subset"));
  CHECK(subset.status == CheckStatus::warning);
  CHECK_THAT(subset.message, Catch::Contains("2 of the 3"));
}

TEST_CASE("doctor: PBS hostfile against PBS_NODEFILE, a missing hostfile is an error", "[doctor]") {
  FakeProbe probe;
  probe.files["/var/spool/pbs/aux/42.pbs"] = "x1\nx2\n";
  probe.files["/h/other"] = "x1\nx3\n";
  auto env = make_env({{"PBS_JOBID", "42.pbs"}, {"PBS_NODEFILE", "/var/spool/pbs/aux/42.pbs"}});
  CHECK(core::check_scheduler(env, probe, facts_for(env, probe)).status == CheckStatus::ok);
  auto r = core::check_scheduler(env, probe, facts_for(env, probe, "/h/other"));
  CHECK(r.status == CheckStatus::error);
  CHECK_THAT(r.message, Catch::Contains("x3") && Catch::Contains("PBS_NODEFILE"));
  auto missing = core::check_scheduler(env, probe, facts_for(env, probe, "/h/none"));
  CHECK(missing.status == CheckStatus::error);
  CHECK_FALSE(missing.remedy.empty());
}

TEST_CASE("doctor: no machine profile inside a batch job is a warning", "[doctor]") {
  FakeProbe probe;
  auto env = make_env({{"SLURM_JOB_ID", "5"}, {"SLURM_NODELIST", "n1"}}, "mystery-host");
  auto r = core::check_machine(env, facts_for(env, probe));
  CHECK(r.status == CheckStatus::warning);
  CHECK_THAT(r.remedy, Catch::Contains("EZPZ_MACHINE"));
  auto aurora = make_env({}, "x4102c0s0b0n0");
  CHECK(core::check_machine(aurora, facts_for(aurora, probe)).message.rfind("aurora", 0) == 0);
}

TEST_CASE("doctor: the machine check shows the evidence", "[doctor]") {
  FakeProbe probe;
  auto check = [&](const core::Env& env) { return core::check_machine(env, facts_for(env, probe)); };
  auto confirmed = check(make_env({{"PBS_JOBID", "1.aurora-pbs-0001"}}, "x4102c0s0b0n0"));
  CHECK(confirmed.status == CheckStatus::ok);
  CHECK_THAT(confirmed.message,
             Catch::StartsWith("aurora (hostname 'x4102c0s0b0n0' starts with 'x4' and PBS_JOBID contains 'aurora')"));
  auto guessed = check(make_env({}, "x4102c0s0b0n0"));
  CHECK(guessed.status == CheckStatus::warning);
  CHECK_THAT(guessed.message, Catch::StartsWith("aurora is a guess (hostname 'x4102c0s0b0n0' starts with 'x4', "
                                                "which aurora shares with other sites, and there is no PBS_JOBID"));
  CHECK_THAT(guessed.remedy, Catch::Contains("EZPZ_MACHINE=aurora") && Catch::Contains("EZPZ_MACHINE=local"));
  auto named = check(make_env({{"EZPZ_MACHINE", "polaris"}}, "x4102c0s0b0n0"));
  CHECK(named.status == CheckStatus::ok);
  CHECK_THAT(named.message, Catch::StartsWith("polaris (named by EZPZ_MACHINE=polaris)"));
  auto foreign = check(make_env({{"SLURM_JOB_ID", "5"}, {"SLURM_NODELIST", "nid001"}}, "nid001"));
  CHECK(foreign.status == CheckStatus::warning);
  CHECK_THAT(foreign.message, Catch::Contains("which perlmutter shares with other sites, and there is no NERSC_HOST "
                                              "or SLURM_CLUSTER_NAME containing 'perlmutter'"));
  auto login = check(make_env({}, "login1"));
  CHECK(login.status == CheckStatus::ok);
  CHECK_THAT(login.message, Catch::StartsWith("local (hostname 'login1' starts with 'login', which frontier and "
                                              "perlmutter share with other sites"));
}

TEST_CASE("doctor: launcher flavour and version from --version text", "[doctor]") {
  CHECK(core::launcher_flavour("mpiexec (OpenRTE) 4.1.4\n\nReport bugs to http://www.open-mpi.org/") ==
        "Open MPI 4.1.4");
  CHECK(core::launcher_flavour("HYDRA build details:\n    Version:                                 4.0.2\n") ==
        "MPICH 4.0.2");
  CHECK(core::launcher_flavour("slurm 23.02.7\n") == "Slurm 23.02.7");
  CHECK(core::launcher_flavour("Intel(R) MPI Library for Linux* OS, Version 2021.9 Build 2023") == "Intel MPI 2021.9");
  CHECK(core::launcher_flavour("mpiexec version 1.2.12 (PALS)") == "Cray PALS");
  CHECK(core::launcher_flavour("something else").empty());
}

TEST_CASE("doctor: the launcher check runs the chosen launcher's --version", "[doctor]") {
  FakeProbe probe;
  auto env = make_env({});
  probe.programs["mpiexec"] = "/opt/openmpi/bin/mpiexec";
  probe.outputs["/opt/openmpi/bin/mpiexec --version"] = {0, "mpiexec (OpenRTE) 4.1.4\n", false};
  probe.files["/h/two"] = "a\nb\n";  // one host alone gets the built-in launcher
  auto r = core::check_launcher(env, probe, facts_for(env, probe, "/h/two"));
  CHECK(r.status == CheckStatus::ok);
  CHECK_THAT(r.message, Catch::Contains("Open MPI 4.1.4") && Catch::Contains("openmpi flags"));

  // An MPICH-looking path whose mpiexec says Open MPI: the flags would be wrong.
  FakeProbe odd;
  odd.programs["mpiexec"] = "/opt/mpich/bin/mpiexec";
  odd.outputs["/opt/mpich/bin/mpiexec --version"] = {0, "mpiexec (OpenRTE) 4.1.4\n", false};
  odd.files["/h/two"] = "a\nb\n";
  CHECK(core::check_launcher(env, odd, facts_for(env, odd, "/h/two")).status == CheckStatus::warning);
  CHECK_THAT(core::check_launcher(env, odd, facts_for(env, odd)).message, Catch::Contains("built-in launcher"));

  // Several hosts and no MPI at all.
  FakeProbe none;
  none.files["/h/two"] = "a\nb\n";
  auto err = core::check_launcher(env, none, facts_for(env, none, "/h/two"));
  CHECK(err.status == CheckStatus::error);
}

TEST_CASE("doctor: /tmp too small for the active env is an error", "[doctor]") {
  FakeProbe probe;
  auto env = make_env({{"VIRTUAL_ENV", "/home/me/venv"}});
  probe.tree_sizes["/home/me/venv"] = 3ULL << 30;
  probe.space["/tmp"] = {1ULL << 30, 10ULL << 30};
  probe.space["/dev/shm"] = {8ULL << 30, 8ULL << 30};
  auto r = core::check_space(env, probe);
  CHECK(r.status == CheckStatus::error);
  CHECK_THAT(r.message, Catch::Contains("3.2 GB") && Catch::Contains("1.1 GB"));
  probe.space["/tmp"] = {100ULL << 30, 200ULL << 30};
  CHECK(core::check_space(env, probe).status == CheckStatus::ok);
  probe.space.erase("/dev/shm");
  CHECK(core::check_space(env, probe).status == CheckStatus::warning);
}

TEST_CASE("doctor: low ulimit -n, and -l on a multi-node job, are warnings", "[doctor]") {
  FakeProbe probe;
  auto env = make_env({});
  probe.limits["nofile"] = {1024, 524288};
  auto r = core::check_ulimits(probe, facts_for(env, probe));
  CHECK(r.status == CheckStatus::warning);
  CHECK(r.remedy == "ulimit -n 524288 in the job script");
  probe.limits["nofile"] = {65536, 65536};
  probe.limits["memlock"] = {64 << 10, 64 << 10};
  CHECK(core::check_ulimits(probe, facts_for(env, probe)).status == CheckStatus::ok);  // one host
  probe.files["/h/two"] = "a\nb\n";
  auto multi = core::check_ulimits(probe, facts_for(env, probe, "/h/two"));
  CHECK(multi.status == CheckStatus::warning);
  CHECK_THAT(multi.remedy, Catch::Contains("admins"));
}

TEST_CASE("doctor: W&B credentials from the key, ~/.netrc or offline mode, installed or not", "[doctor]") {
  FakeProbe probe;
  CHECK(core::check_wandb(make_env({{"WANDB_MODE", "offline"}}), probe).status == CheckStatus::ok);
  CHECK(core::check_wandb(make_env({{"WANDB_API_KEY", "k"}}), probe).status == CheckStatus::ok);
  probe.files["/home/me/.netrc"] = "machine github.com login x password y\nmachine api.wandb.ai\n  login user\n";
  CHECK(core::check_wandb(make_env({{"HOME", "/home/me"}}), probe).status == CheckStatus::ok);
  probe.files["/home/me/.netrc"] = "machine github.com login x password y\n";
  auto r = core::check_wandb(make_env({{"HOME", "/home/me"}}), probe);
  CHECK(r.status == CheckStatus::warning);
  CHECK_THAT(r.remedy, Catch::Contains("WANDB_MODE=offline"));
  probe.files["/home/me/.netrc"] = "machine wandb.example.org login u password p\n";
  CHECK(core::check_wandb(make_env({{"HOME", "/home/me"}, {"WANDB_BASE_URL", "https://wandb.example.org:443/"}}), probe)
            .status == CheckStatus::ok);
}

TEST_CASE("doctor: accelerator device files", "[doctor]") {
  FakeProbe probe;
  auto env = make_env({});
  probe.dirs["/dev"] = {"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"};
  auto r = core::check_accelerators(env, probe, facts_for(env, probe));
  CHECK(r.status == CheckStatus::ok);
  CHECK_THAT(r.message, Catch::Contains("2 NVIDIA"));
  auto masked = make_env({{"CUDA_VISIBLE_DEVICES", "0,3"}});
  CHECK(core::check_accelerators(masked, probe, facts_for(masked, probe)).status == CheckStatus::error);
  FakeProbe none;
  CHECK(core::check_accelerators(env, none, facts_for(env, none)).status == CheckStatus::ok);
  auto cpu = make_env({{"TORCH_DEVICE", "cpu"}});
  CHECK(core::check_accelerators(cpu, none, facts_for(cpu, none)).status == CheckStatus::ok);
  // Aurora expects 12 XPUs: none here is a login node.
  auto aurora = make_env({}, "x4102c0s0b0n0");
  auto login = core::check_accelerators(aurora, none, facts_for(aurora, none));
  CHECK(login.status == CheckStatus::warning);
  CHECK_THAT(login.message, Catch::Contains("12 GPUs"));
}

TEST_CASE("doctor: NCCL/CCL/libfabric variables known to hang jobs", "[doctor]") {
  FakeProbe probe;
  probe.dirs["/sys/class/net"] = {"lo", "eth0", "hsn0", "hsn1"};
  auto check = [&](std::map<std::string, std::string, std::less<>> vars, std::string host = "laptop") {
    auto env = make_env(std::move(vars), std::move(host));
    return core::check_network_env(env, probe, facts_for(env, probe));
  };
  CHECK(check({}).status == CheckStatus::ok);
  CHECK(check({{"NCCL_SOCKET_IFNAME", "hsn"}}).status == CheckStatus::ok);
  CHECK(check({{"NCCL_SOCKET_IFNAME", "^docker,lo"}}).status == CheckStatus::ok);
  auto bad = check({{"NCCL_SOCKET_IFNAME", "ib0"}});
  CHECK(bad.status == CheckStatus::error);
  CHECK_THAT(bad.message, Catch::Contains("ib0") && Catch::Contains("hsn0"));
  CHECK(check({{"NCCL_SOCKET_IFNAME", "=hsn"}}).status == CheckStatus::error);
  CHECK(check({{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"}}).status == CheckStatus::warning);
  CHECK(check({{"FI_PROVIDER", "tcp"}}, "x4102c0s0b0n0").status == CheckStatus::warning);
  CHECK(check({{"FI_PROVIDER", "tcp"}}).status == CheckStatus::ok);  // not a Slingshot machine
}

TEST_CASE("doctor: per-node tier names unreachable, skewed and full hosts", "[doctor]") {
  core::NodeTierOptions o;
  o.version = "0.1.0";
  o.exe = "/shared/bin/ezpz";
  o.dst = "/tmp";
  o.need_bytes = 1ULL << 30;
  core::NodeReply down;
  down.host = "node3";
  core::NodeResult err;
  err.host = "node3";
  err.error = "cannot connect to node3: Connection refused";
  down.early = core::encode_result(err) + "\n";
  down.exit_code = 255;
  const std::vector<core::NodeReply> replies = {answered("node1", 0, 8ULL << 30), down,
                                                answered("node2", 5'000'000'000LL, 8ULL << 30),
                                                answered("node4", 0, 100 << 20, false)};
  const auto results = core::node_checks(replies, o);
  auto find = [&](const std::string& name, const std::string& host = "") {
    for (const auto& r : results) {
      if (r.name == name && r.host == host) {
        return r;
      }
    }
    FAIL("no result " << name << " " << host);
    return core::CheckResult{};
  };
  CHECK(find("nodes").status == CheckStatus::error);
  CHECK_THAT(find("nodes").message, Catch::Contains("3 of 4") && Catch::Contains("node3"));
  CHECK_THAT(find("node", "node3").message, Catch::Contains("Connection refused"));
  CHECK(find("clock").status == CheckStatus::warning);
  CHECK_THAT(find("clock").message, Catch::Contains("node2"));
  CHECK(find("node-space").status == CheckStatus::error);
  CHECK_THAT(find("node-space").message, Catch::Contains("node4"));
  CHECK(find("ezpz-version").status == CheckStatus::warning);
  CHECK(find("node", "node1").status == CheckStatus::ok);
  CHECK_THAT(find("node", "node1").message, Catch::Contains("round trip 2.00 ms") && Catch::Contains("+0.0 ms"));

  const auto all_ok = core::node_checks({answered("a", 0, 8ULL << 30), answered("b", 0, 8ULL << 30)}, o);
  CHECK(core::doctor_exit_code(all_ok) == 0);
  CHECK(core::doctor_exit_code(results) == 1);
}

TEST_CASE("doctor: a node silent past --timeout is said so, and the same ezpz everywhere settles the local warning",
          "[doctor]") {
  core::NodeTierOptions o;
  o.version = "0.1.0";
  o.exe = "/tmp/ezpz";
  o.timeout_s = 7;
  core::NodeReply late;
  late.host = "node3";
  late.exit_code = 143;  // ezpz's SIGTERM at the deadline, passed on by ssh
  late.timed_out = true;
  auto find = [](const std::vector<core::CheckResult>& rs, const std::string& name, const std::string& host = "") {
    const auto it = std::find_if(rs.begin(), rs.end(), [&](const auto& r) { return r.name == name && r.host == host; });
    REQUIRE(it != rs.end());
    return *it;
  };
  auto results = core::node_checks({answered("node1", 0, 8ULL << 30), late}, o);
  CHECK(find(results, "node", "node3").message == "no answer from node3 within 7 s");
  late.ready = true;
  CHECK(find(core::node_checks({late}, o), "node", "node3").message ==
        "no answer from node3 within 7 s (ezpz started there)");
  late.timed_out = false;  // it ended by itself: its code is the news
  CHECK_THAT(find(core::node_checks({late}, o), "node", "node3").message, !Catch::Contains("within"));

  // ezpz in /tmp (node-local) on a job of two hosts: the local check warns...
  FakeProbe probe;
  probe.files["/h/two"] = "node1\nnode2\n";
  auto env = make_env({});
  env.self_exe = "/tmp/ezpz";
  auto local = core::check_ezpz(env, facts_for(env, probe, "/h/two"));
  REQUIRE(local.status == CheckStatus::warning);
  // ...until --nodes finds the same binary at that path on every host.
  std::vector<core::CheckResult> all = {local};
  for (auto& r : core::node_checks({answered("node2", 0, 8ULL << 30)}, o)) {
    all.push_back(r);
  }
  core::settle_ezpz_check(all);
  CHECK(all[0].status == CheckStatus::ok);
  CHECK_THAT(all[0].message, Catch::EndsWith("(tmpfs): node-local, and doctor --nodes found the same binary at its "
                                             "path on every host"));
  CHECK(all[0].remedy.empty());
  // A host with another binary, or one that did not answer: the warning stays.
  std::vector<core::CheckResult> other = {local};
  for (auto& r : core::node_checks({answered("node2", 0, 8ULL << 30, false)}, o)) {
    other.push_back(r);
  }
  core::settle_ezpz_check(other);
  CHECK(other[0].status == CheckStatus::warning);
  std::vector<core::CheckResult> silent = {local};
  for (auto& r : core::node_checks({answered("node1", 0, 8ULL << 30), late}, o)) {
    silent.push_back(r);
  }
  core::settle_ezpz_check(silent);
  CHECK(silent[0].status == CheckStatus::warning);
}

TEST_CASE("doctor: the launch probe needs every rank's variables from every host", "[doctor]") {
  auto line = [](const std::string& host, int rank, int world) {
    return core::encode_rank_line(make_env({{"RANK", std::to_string(rank)},
                                            {"WORLD_SIZE", std::to_string(world)},
                                            {"LOCAL_RANK", "0"},
                                            {"MASTER_ADDR", "node1"},
                                            {"MASTER_PORT", "29500"}},
                                           host)) +
           "\n";
  };
  core::LaunchProbeOutcome o;
  o.launcher = "mpiexec (mpich)";
  o.hosts = {"node1", "node2"};
  o.output = {0, line("node1", 0, 2) + "noise\n" + line("node2", 1, 2), false};
  CHECK(core::launch_check(o).status == CheckStatus::ok);
  o.output = {1, line("node1", 0, 2) + "ssh: connect to host node2: Connection refused\n", false};
  auto r = core::launch_check(o);
  CHECK(r.status == CheckStatus::error);
  CHECK_THAT(r.message, Catch::Contains("none from node2") && Catch::Contains("Connection refused"));
  o.output = {0, line("node1", 0, 2) + line("node2", 0, 2), false};
  CHECK(core::launch_check(o).status == CheckStatus::error);
  o.output.timed_out = true;
  CHECK_THAT(core::launch_check(o).message, Catch::Contains("did not finish"));
  // The launcher's own words: the line naming the error, not its usage hint or its banners.
  o.output = {1, "mpiexec: Error: unknown option \"--line-buffer\"\nType 'mpiexec --help' for usage.\n", false};
  CHECK_THAT(core::launch_check(o).message, Catch::EndsWith(": mpiexec: Error: unknown option \"--line-buffer\""));
  o.output = {
      1,
      std::string(74, '-') + "\nYour job has requested more processes than the ppr for\n" + std::string(74, '-') + "\n",
      false};
  CHECK_THAT(core::launch_check(o).message,
             Catch::EndsWith(": Your job has requested more processes than the ppr for"));
}

TEST_CASE("doctor: torch is imported by the python3 ranks run, and that python is named", "[doctor]") {
  FakeProbe probe;
  const auto env = make_env({});                                        // no HOME: nothing kept
  CHECK(core::check_torch(env, probe).status == CheckStatus::warning);  // no python3 at all
  probe.programs["python3"] = "/venv/bin/python3";
  const auto import =
      "/venv/bin/python3 -c " + std::string(core::kSysPathProbe) + "import torch; print(torch.__version__)";
  probe.outputs[import] = {1, "Traceback (most recent call last):\nModuleNotFoundError: No module named 'torch'\n",
                           false};
  auto missing = core::check_torch(env, probe);
  CHECK(missing.status == CheckStatus::warning);
  CHECK(missing.message ==
        "python3 (/venv/bin/python3) cannot import torch: ModuleNotFoundError: No module named 'torch'");
  probe.outputs[import] = {0, "2.5.1\n", false};
  CHECK(core::check_torch(env, probe).message == "torch 2.5.1 imports in python3 (/venv/bin/python3)");
  CHECK(core::check_torch(env, probe).status == CheckStatus::ok);
  probe.outputs[import] = {-1, "", true};
  CHECK_THAT(core::check_torch(env, probe).message, Catch::Contains("took over 30 s"));
}

TEST_CASE("doctor: torch's answer is kept while the python and its sys.path are unchanged", "[doctor]") {
  FakeProbe probe;
  const auto env = make_env({{"HOME", "/home/me"}, {"VIRTUAL_ENV", "/venv"}});
  probe.programs["python3"] = "/venv/bin/python3";
  probe.stamps["/venv/bin/python3"] = {100, 6'000'000, 7};
  const std::string site = "/venv/lib/python3.11/site-packages";
  probe.stamps[site] = {200, 4096, 8};
  const auto import =
      "/venv/bin/python3 -c " + std::string(core::kSysPathProbe) + "import torch; print(torch.__version__)";
  probe.outputs[import] = {0, "EZPZ-SYS-PATH [\"/usr/lib/python311.zip\", \"" + site + "\"]\n2.5.1\n", false};
  const std::string kept = "/home/me/.cache/ezpz/python-torch.json";
  auto ask = [&] {
    const auto before = probe.ran.size();
    auto r = core::check_torch(env, probe);
    if (probe.written.count(kept) != 0) {
      probe.files[kept] = probe.written[kept];  // (the fake's writes are not read back by themselves)
    }
    return std::make_pair(r, probe.ran.size() > before);
  };
  auto [first, ran] = ask();
  CHECK(ran);
  CHECK(first.message == "torch 2.5.1 imports in python3 (/venv/bin/python3)");
  CHECK(probe.made_dirs.count("/home/me/.cache/ezpz") == 1);
  auto [second, ran_again] = ask();
  CHECK_FALSE(ran_again);
  CHECK(second.message ==
        "torch 2.5.1 imports in python3 (/venv/bin/python3) (as last time: the python and its sys.path are unchanged)");
  // pip installs into site-packages (its mtime moves): asked again.
  probe.stamps[site].mtime_ns = 300;
  CHECK(ask().second);
  CHECK_FALSE(ask().second);
  // Another env, or a new python: asked again.
  auto other = env;
  other.vars["VIRTUAL_ENV"] = "/other";
  const auto before = probe.ran.size();
  (void)core::check_torch(other, probe);
  CHECK(probe.ran.size() > before);
  probe.stamps["/venv/bin/python3"].inode = 9;
  CHECK(ask().second);
  // A garbled file: asked again, never trusted.
  probe.files[kept] = "{not json";
  CHECK(ask().second);
}

TEST_CASE("doctor: no W&B warning where wandb is not installed, TORCH_DEVICE's remedy only where it applies",
          "[doctor]") {
  FakeProbe probe;
  probe.programs["python3"] = "/venv/bin/python3";
  probe.outputs["/venv/bin/python3 -c " + std::string(core::kSysPathProbe) +
                "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('wandb') else 3)"] = {3, "", false};
  auto r = core::check_wandb(make_env({{"HOME", "/home/me"}}), probe);
  CHECK(r.status == CheckStatus::ok);
  CHECK(r.message == "wandb is not installed for /venv/bin/python3: nothing to check");
  // No GPUs and none expected: ranks run on the CPU, nothing to fix.
  FakeProbe none;
  auto env = make_env({});
  auto cpu = core::check_accelerators(env, none, facts_for(env, none));
  CHECK(cpu.status == CheckStatus::ok);
  CHECK(cpu.remedy.empty());
  auto cuda = make_env({{"TORCH_DEVICE", "cuda"}});
  auto asked = core::check_accelerators(cuda, none, facts_for(cuda, none));
  CHECK(asked.status == CheckStatus::warning);
  CHECK_THAT(asked.remedy, Catch::Contains("unset TORCH_DEVICE"));
}

TEST_CASE("doctor: JSON has the documented fields, text has tags and remedies", "[doctor]") {
  auto warn = core::check_warning("wandb", "no key", "wandb login");
  auto node = core::check_error("node", "refused", "fix ssh");
  node.host = "n1";
  auto ok_node = core::check_ok("node", "fine");
  ok_node.host = "n2";
  const std::vector<core::CheckResult> results = {core::check_ok("scheduler", "local"), warn, node, ok_node};
  const auto whole = nlohmann::json::parse(core::doctor_json(results));
  CHECK(whole["summary"] == nlohmann::json{{"ok", 2}, {"warnings", 1}, {"failed", 1}});
  const auto& j = whole["checks"];
  REQUIRE(j.size() == 4);
  for (const auto& r : j) {
    for (const char* key : {"name", "status", "message", "remedy", "duration_ms"}) {
      CHECK(r.contains(key));
    }
  }
  CHECK_FALSE(j[0].contains("host"));
  CHECK(j[2]["host"] == "n1");
  CHECK(j[1]["status"] == "warning");
  const auto text = core::doctor_text(results, false, false);
  CHECK_THAT(text, Catch::Contains("[ OK ] scheduler: local\n"));
  CHECK_THAT(text, Catch::Contains("[WARN] wandb: no key\n       -> wandb login\n"));
  CHECK_THAT(text, Catch::Contains("[FAIL] node (n1): refused"));
  CHECK_THAT(text, !Catch::Contains("n2"));
  CHECK_THAT(core::doctor_text(results, false, true), Catch::Contains("[ OK ] node (n2): fine"));
  CHECK_THAT(core::doctor_text(results, true, false), Catch::Contains("\033[1;33m[WARN]\033[0m"));
  CHECK_THAT(text, Catch::EndsWith("\n2 ok, 1 warning, 1 failed\n"));
}

TEST_CASE("doctor: the node's free space is measured at the nearest existing directory", "[doctor]") {
  FakeProbe probe;
  probe.space["/tmp"] = {1, 2};
  CHECK(core::existing_ancestor("/tmp/new env/sub", probe) == "/tmp");
  CHECK(core::existing_ancestor("/nowhere", probe) == "/");
  auto f = core::decode_node_facts(answered("n", 0, 5).reply);
  REQUIRE(f);
  CHECK(f->dst_free == 5);
  CHECK_FALSE(core::decode_node_facts("not json"));
}

TEST_CASE("doctor user: a user only in sssd/LDAP needs USER and HOME", "[doctor]") {
  using ezpz::core::CheckStatus;
  ezpz::core::Env env;
  env.uid = 4242;
  const std::string passwd = "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/bash\n";
  const std::string nss = "passwd:         files sss\ngroup: files sss\n";
  env.vars = {{"USER", "bob"}, {"HOME", "/home/bob"}};
  auto r = ezpz::core::check_user(env, passwd, nss);
  CHECK(r.status == CheckStatus::warning);
  CHECK(r.message.find("files sss") != std::string::npos);
  CHECK(r.message.find("USER=bob") != std::string::npos);
  env.vars = {{"HOME", "/home/bob"}};
  CHECK(ezpz::core::check_user(env, passwd, nss).status == CheckStatus::error);
  env.uid = 1000;
  CHECK(ezpz::core::check_user(env, passwd, nss).status == CheckStatus::ok);
}

TEST_CASE("doctor: every row of local_checks runs the check it names, each name once", "[doctor]") {
  FakeProbe probe;
  const auto env = make_env({{"USER", "me"}, {"HOME", "/home/me"}});
  const auto facts = facts_for(env, probe);
  std::vector<std::string> names;
  for (const auto& check : core::local_checks()) {
    INFO("row: " << check.name);
    CHECK(check.run(env, probe, facts).name == check.name);
    names.emplace_back(check.name);
  }
  std::sort(names.begin(), names.end());
  CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
  CHECK(names.size() == 17);
}
