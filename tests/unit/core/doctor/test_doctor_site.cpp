// doctor's checks of the traps sites have written down, on a fake probe (the situations made real
// are in tests/e2e/test_doctor.py: an empty MODULEPATH, a stale munge socket, a plugin directory).
#include <catch2/catch.hpp>

#include "core/doctor/doctor.hpp"
#include "fake_probe.hpp"

using namespace ezpz;
using core::CheckStatus;
using test::FakeProbe;
using test::make_env;

namespace {

core::LocalFacts facts_on(const core::Env& env, FakeProbe& probe, const std::string& machine) {
  return core::gather_local_facts(env, probe, std::nullopt, machine, "0.1.0");
}

}  // namespace

TEST_CASE("doctor: the NCCL network plugin the machine's fast path needs", "[doctor]") {
  FakeProbe probe;
  probe.dirs["/soft/nccl/lib"] = {"libnccl.so.2", "libnccl-net.so"};
  probe.dirs["/opt/ofi/lib"] = {"libnccl-net-aws-ofi.so"};
  auto env = make_env({{"LD_LIBRARY_PATH", "/usr/lib:/opt/cuda/lib64"}});
  auto missing = core::check_net_plugin(env, probe, facts_on(env, probe, "perlmutter"));
  CHECK(missing.status == CheckStatus::warning);
  CHECK_THAT(missing.message, Catch::Contains("no libnccl-net*.so on LD_LIBRARY_PATH (perlmutter)") &&
                                  Catch::Contains("falls back to TCP"));
  CHECK_THAT(missing.remedy, Catch::Contains("module load nccl/2.24.3"));
  // Frontier's RCCL: its own plugin name.
  CHECK_THAT(core::check_net_plugin(env, probe, facts_on(env, probe, "frontier")).message,
             Catch::Contains("librccl-net*.so or libnccl-net*.so"));

  env.vars["LD_LIBRARY_PATH"] = "/usr/lib::/soft/nccl/lib";
  auto found = core::check_net_plugin(env, probe, facts_on(env, probe, "perlmutter"));
  CHECK(found.status == CheckStatus::ok);
  CHECK_THAT(found.message, Catch::StartsWith("/soft/nccl/lib/libnccl-net.so is on LD_LIBRARY_PATH"));

  env.vars["NCCL_NET_PLUGIN"] = "none";
  CHECK(core::check_net_plugin(env, probe, facts_on(env, probe, "perlmutter")).status == CheckStatus::warning);
  env.vars["NCCL_NET_PLUGIN"] = "aws-ofi";  // NCCL loads libnccl-net-aws-ofi.so
  CHECK(core::check_net_plugin(env, probe, facts_on(env, probe, "perlmutter")).status == CheckStatus::warning);
  env.vars["LD_LIBRARY_PATH"] = "/opt/ofi/lib";
  CHECK(core::check_net_plugin(env, probe, facts_on(env, probe, "perlmutter")).status == CheckStatus::ok);

  // A machine whose collectives need no plugin (Aurora's oneCCL, a laptop): nothing to say.
  CHECK(core::check_net_plugin(make_env({}), probe, facts_on(make_env({}), probe, "aurora")).status == CheckStatus::ok);
}

TEST_CASE("doctor: an empty MODULEPATH where the site's software comes as modules", "[doctor]") {
  FakeProbe probe;
  auto empty = make_env({{"MODULEPATH", ""}});
  auto r = core::check_modules(empty, facts_on(empty, probe, "aurora"));
  CHECK(r.status == CheckStatus::warning);
  CHECK_THAT(r.message, Catch::Contains("every `module load` does nothing"));
  CHECK_THAT(r.remedy, Catch::Contains("#!/bin/bash -l") && Catch::Contains("set -u"));
  CHECK(core::check_modules(make_env({}), facts_on(make_env({}), probe, "frontier")).status == CheckStatus::warning);
  auto set = make_env({{"MODULEPATH", "/soft/modulefiles:/opt/cray/pe/lmod/modulefiles/core"}});
  CHECK(core::check_modules(set, facts_on(set, probe, "aurora")).message == "MODULEPATH holds 2 directories");
  CHECK(core::check_modules(empty, facts_on(empty, probe, "local")).status == CheckStatus::ok);
}

TEST_CASE("doctor: Cray MPICH's GPU support without its GTL library", "[doctor]") {
  FakeProbe probe;
  CHECK(core::check_gpu_mpi(make_env({}), probe).status == CheckStatus::ok);
  probe.dirs["/opt/cray/pe/mpich/8.1.28/gtl/lib"] = {"libmpi_gtl_cuda.so.0"};
  auto on = make_env({{"MPICH_GPU_SUPPORT_ENABLED", "1"}, {"LD_LIBRARY_PATH", "/opt/cray/pe/mpich/8.1.28/gtl/lib"}});
  auto r = core::check_gpu_mpi(on, probe);
  CHECK(r.status == CheckStatus::warning);
  CHECK_THAT(r.message, Catch::Contains("GTL library is not linked") &&
                            Catch::Contains("/opt/cray/pe/mpich/8.1.28/gtl/lib/libmpi_gtl_cuda.so.0 is on"));
  CHECK_THAT(r.remedy, Catch::StartsWith("export MPICH_GPU_SUPPORT_ENABLED=0"));
  on.vars["LD_PRELOAD"] = "/opt/cray/pe/mpich/8.1.28/gtl/lib/libmpi_gtl_cuda.so.0";
  CHECK(core::check_gpu_mpi(on, probe).status == CheckStatus::ok);
}

TEST_CASE("doctor: a munge socket its daemon left", "[doctor]") {
  FakeProbe probe;
  CHECK(core::check_munge(probe).status == CheckStatus::ok);
  probe.sockets["/run/munge/munge.socket.2"] = core::SocketState::answers;
  CHECK(core::check_munge(probe).message == "munged answers at /run/munge/munge.socket.2");
  probe.sockets["/run/munge/munge.socket.2"] = core::SocketState::stale;
  const auto r = core::check_munge(probe);
  CHECK(r.status == CheckStatus::warning);
  CHECK_THAT(r.message, Catch::Contains("2.4 s"));
  CHECK_THAT(r.remedy, Catch::Contains("PMIX_MCA_psec=native"));
}

TEST_CASE("doctor: whether the job outlives a node's failure, as --spare-nodes needs", "[doctor]") {
  FakeProbe probe;
  CHECK_THAT(core::check_failover(make_env({}), probe).message, Catch::Contains("not in a Slurm or PBS job"));
  probe.programs["scontrol"] = "/usr/bin/scontrol";
  auto slurm = make_env({{"SLURM_JOB_ID", "42"}});
  probe.outputs["scontrol --json show job 42"] = {0, R"({"jobs": [{"kill_on_node_fail": true}]})", false};
  auto kills = core::check_failover(slurm, probe);
  CHECK(kills.status == CheckStatus::ok);  // no fault for a job that does not swap nodes
  CHECK_THAT(kills.message, Catch::Contains("without --no-kill") && Catch::Contains("#SBATCH --no-kill"));
  probe.outputs["scontrol --json show job 42"] = {0, R"({"jobs": [{"kill_on_node_fail": false}]})", false};
  CHECK_THAT(core::check_failover(slurm, probe).message, Catch::Contains("outlives a node's failure"));
  auto pbs = make_env({{"PBS_JOBID", "7.pbs"}});
  probe.programs["qstat"] = "/opt/pbs/bin/qstat";
  probe.outputs["qstat -f 7.pbs"] = {0, "Job Id: 7.pbs\n    tolerate_node_failures = all\n", false};
  CHECK_THAT(core::check_failover(pbs, probe).message, Catch::Contains("tolerate_node_failures=all"));
}
