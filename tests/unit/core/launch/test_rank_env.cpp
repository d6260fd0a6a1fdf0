#include <catch2/catch.hpp>

#include <algorithm>

#include "core/launch/rank_env.hpp"
#include "fake_probe.hpp"

using namespace ezpz::core;
using ezpz::test::make_env;

namespace {
RankContext ctx8() {
  RankContext c;
  c.nprocs = 8;
  c.ppn = 4;
  c.nhosts = 2;
  c.master_addr = "node1";
  c.master_port = 29512;
  return c;
}
std::string get(const EnvList& env, const std::string& name) {
  for (const auto& [k, v] : env) {
    if (k == name) {
      return v;
    }
  }
  return "<unset>";
}
}  // namespace

TEST_CASE("rank from each launcher's variables", "[rank_env]") {
  struct Case {
    const char* launcher;
    std::map<std::string, std::string, std::less<>> vars;
    RankInfo want;
  };
  for (const auto& c : std::vector<Case>{
           {"Open MPI",
            {{"OMPI_COMM_WORLD_RANK", "5"},
             {"OMPI_COMM_WORLD_SIZE", "8"},
             {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
             {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
             {"OMPI_COMM_WORLD_NODE_RANK", "0"},
             {"PMIX_RANK", "5"}},
            {5, 8, 1, 4, 1, "OMPI_COMM_WORLD_RANK"}},
           {"MPICH Hydra",
            {{"PMI_RANK", "6"}, {"PMI_SIZE", "8"}, {"MPI_LOCALRANKID", "2"}, {"MPI_LOCALNRANKS", "4"}},
            {6, 8, 2, 4, 1, "PMI_RANK"}},
           {"PALS",
            {{"PALS_RANKID", "7"}, {"PALS_LOCAL_RANKID", "3"}, {"PALS_NODEID", "1"}, {"PMI_SIZE", "8"}},
            {7, 8, 3, 4, 1, "PALS_RANKID"}},
           {"Slurm",
            {{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "0"}, {"SLURM_NODEID", "1"}},
            {4, 8, 0, 4, 1, "SLURM_PROCID"}},
           {"PMIx only", {{"PMIX_RANK", "3"}}, {3, 8, 3, 4, 0, "PMIX_RANK"}},
       }) {
    INFO(c.launcher);
    auto r = detect_rank(make_env(c.vars), ctx8());
    REQUIRE(r);
    CHECK(*r == c.want);
  }
}

TEST_CASE("rank priority follows ezpz: PMI_RANK before OMPI before SLURM", "[rank_env]") {
  auto r = detect_rank(make_env({{"SLURM_PROCID", "0"}, {"OMPI_COMM_WORLD_RANK", "2"}, {"PMI_RANK", "1"}}), ctx8());
  REQUIRE(r);
  CHECK(r->rank == 1);
  CHECK(r->source == "PMI_RANK");
}

TEST_CASE("only Hydra's ranks (PMI_FD) end a death by signal as its code", "[rank_env]") {
  CHECK(launcher_kills_all_on_signal(make_env({{"PMI_RANK", "1"}, {"PMI_SIZE", "4"}, {"PMI_FD", "6"}})));
  // PALS, Open MPI, Slurm: the same signal, as the command ended.
  CHECK_FALSE(launcher_kills_all_on_signal(make_env({{"PMI_RANK", "1"}, {"PALS_RANKID", "1"}})));
  CHECK_FALSE(launcher_kills_all_on_signal(make_env({{"OMPI_COMM_WORLD_RANK", "1"}})));
  CHECK_FALSE(launcher_kills_all_on_signal(make_env({{"SLURM_PROCID", "1"}})));
}

TEST_CASE("no rank variable: rank 0 of a world of one, else a usage error", "[rank_env]") {
  RankContext one;
  auto r = detect_rank(make_env({}), one);
  REQUIRE(r);
  CHECK(r->rank == 0);
  CHECK(r->world == 1);
  auto bad = detect_rank(make_env({}), ctx8());
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("cannot tell this process's rank"));
  auto big = detect_rank(make_env({{"PMI_RANK", "9"}, {"PMI_SIZE", "8"}}), ctx8());
  REQUIRE_FALSE(big);
  CHECK_THAT(big.error().message, Catch::Contains("PMI_RANK=9 is not below the world size 8"));
}

TEST_CASE("rank_environment sets the torchrun contract and respects MASTER_*", "[rank_env]") {
  auto env = rank_environment(make_env({}), ctx8(), RankInfo{5, 8, 1, 4, 1, ""});
  CHECK(get(env, "RANK") == "5");
  CHECK(get(env, "WORLD_SIZE") == "8");
  CHECK(get(env, "LOCAL_RANK") == "1");
  CHECK(get(env, "LOCAL_WORLD_SIZE") == "4");
  CHECK(get(env, "NODE_RANK") == "1");
  CHECK(get(env, "MASTER_ADDR") == "node1");
  CHECK(get(env, "MASTER_PORT") == "29512");
  CHECK(get(env, "CUDA_VISIBLE_DEVICES") == "<unset>");
  auto kept = rank_environment(make_env({{"MASTER_ADDR", "mine"}, {"MASTER_PORT", "1234"}}), ctx8(),
                               RankInfo{0, 8, 0, 4, 0, ""});
  CHECK(get(kept, "MASTER_ADDR") == "<unset>");
  CHECK(get(kept, "MASTER_PORT") == "<unset>");
}

TEST_CASE("GPU pinning by local rank", "[rank_env]") {
  auto c = ctx8();
  c.gpu_bind = GpuBind::cuda;
  c.gpus_per_node = 4;
  CHECK(get(rank_environment(make_env({}), c, RankInfo{5, 8, 1, 4, 1, ""}), "CUDA_VISIBLE_DEVICES") == "1");
  c.gpu_reverse = true;  // Polaris: local rank 0 -> GPU 3
  CHECK(get(rank_environment(make_env({}), c, RankInfo{4, 8, 0, 4, 1, ""}), "CUDA_VISIBLE_DEVICES") == "3");
  c.gpu_reverse = false;
  c.gpu_bind = GpuBind::ze;
  c.gpus_per_node = 12;
  CHECK(get(rank_environment(make_env({}), c, RankInfo{13, 24, 13, 24, 0, ""}), "ZE_AFFINITY_MASK") == "1");
  c.gpu_bind = GpuBind::rocr;
  auto from_list = rank_environment(make_env({{"ROCR_VISIBLE_DEVICES", "4,5,6,7"}}), c, RankInfo{1, 2, 1, 2, 0, ""});
  CHECK(get(from_list, "ROCR_VISIBLE_DEVICES") == "5");
}

TEST_CASE("planned ranks are placed block by host", "[rank_env]") {
  CHECK(planned_rank(0, ctx8()) == RankInfo{0, 8, 0, 4, 0, "planned"});
  CHECK(planned_rank(6, ctx8()) == RankInfo{6, 8, 2, 4, 1, "planned"});
}

TEST_CASE("the shim's arguments round-trip the context", "[rank_env]") {
  auto c = ctx8();
  c.gpu_bind = GpuBind::cuda;
  c.gpu_reverse = true;
  c.gpus_per_node = 4;
  CHECK(rank_shim_args(c) == std::vector<std::string>{"--np=8", "--ppn=4", "--nhosts=2", "--master-addr=node1",
                                                      "--master-port=29512", "--gpu-bind=cuda", "--gpus=4",
                                                      "--gpu-reverse", "--restart=0/0"});
  c.run_id = "8817.aurora-pbs";
  c.record_dir = "/home/u/.ezpz/jobs/8817/launch-1";
  c.restart_count = 1;
  c.max_restarts = 3;
  c.label = true;
  auto args = rank_shim_args(c);
  CHECK(std::vector<std::string>(args.end() - 4, args.end()) ==
        std::vector<std::string>{"--run-id=8817.aurora-pbs", "--record-dir=/home/u/.ezpz/jobs/8817/launch-1",
                                 "--restart=1/3", "--label"});
  CHECK(gpu_bind_from_string("ze") == GpuBind::ze);
  CHECK_FALSE(gpu_bind_from_string("opencl"));
}

TEST_CASE("every rank gets torchrun's whole contract, exported values win where torchrun's do", "[rank_env]") {
  auto c = ctx8();
  c.run_id = "4242";
  c.record_dir = "/r";
  c.max_restarts = 2;
  c.restart_count = 1;
  const RankInfo r{5, 8, 1, 4, 1, ""};
  auto env = rank_environment(make_env({}), c, r);
  CHECK(get(env, "GROUP_RANK") == "1");
  CHECK(get(env, "GROUP_WORLD_SIZE") == "2");
  CHECK(get(env, "ROLE_NAME") == "default");
  CHECK(get(env, "ROLE_RANK") == "5");
  CHECK(get(env, "ROLE_WORLD_SIZE") == "8");
  CHECK(get(env, "TORCHELASTIC_RUN_ID") == "4242");
  CHECK(get(env, "TORCHELASTIC_RESTART_COUNT") == "1");
  CHECK(get(env, "TORCHELASTIC_MAX_RESTARTS") == "2");
  CHECK(get(env, "TORCHELASTIC_USE_AGENT_STORE") == "False");
  CHECK(get(env, "TORCHELASTIC_ERROR_FILE") == "/r/error-5.json");
  CHECK(get(env, "TORCH_NCCL_ASYNC_ERROR_HANDLING") == "1");
  CHECK(get(env, "OMP_NUM_THREADS") == "1");  // 4 ranks share the node

  auto mine = rank_environment(make_env({{"OMP_NUM_THREADS", "7"},
                                         {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"},
                                         {"TORCHELASTIC_RUN_ID", "user"},
                                         {"TORCHELASTIC_ERROR_FILE", "/mine.json"}}),
                               c, r);
  for (const char* name :
       {"OMP_NUM_THREADS", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_ERROR_FILE"}) {
    INFO(name);
    CHECK(get(mine, name) == "<unset>");  // not set: the exported value stays
  }
  // One rank per node: OMP_NUM_THREADS is left alone; no record directory: no error file.
  c.record_dir.clear();
  auto alone = rank_environment(make_env({}), c, RankInfo{1, 2, 0, 1, 1, ""});
  CHECK(get(alone, "OMP_NUM_THREADS") == "<unset>");
  CHECK(get(alone, "TORCHELASTIC_ERROR_FILE") == "<unset>");
}

TEST_CASE("with_shim_args replaces only the shim's own arguments", "[rank_env]") {
  auto c = ctx8();
  c.restart_count = 2;
  std::vector<std::string> argv = {"mpirun", "-np",           "8",  "/bin/ezpz", "__rank-env",
                                   "--np=8", "--restart=0/0", "--", "python3",   "--restart=0/0"};
  auto out = with_shim_args(argv, c);
  CHECK(out.front() == "mpirun");
  CHECK(std::find(out.begin(), out.end(), "--restart=2/0") != out.end());
  CHECK(std::vector<std::string>(out.end() - 3, out.end()) ==
        std::vector<std::string>{"--", "python3", "--restart=0/0"});  // the command's own flags are the user's
  CHECK(with_shim_args({"python3", "x.py"}, c) == std::vector<std::string>{"python3", "x.py"});
}
