#include <catch2/catch.hpp>

#include "core/job/machine.hpp"
#include "core/train/torch_choice.hpp"

using namespace ezpz::core;

namespace {

DeviceFacts cuda_node(int devices = 4) {
  DeviceFacts facts;
  facts.cuda_device_count = devices;
  return facts;
}

Env host_env(std::string hostname, std::map<std::string, std::string, std::less<>> vars = {}) {
  Env env;
  env.hostname = std::move(hostname);
  env.vars = std::move(vars);
  return env;
}

}  // namespace

TEST_CASE("device cpu on a CUDA node: gloo, not nccl", "[torch_choice]") {
  TorchWants wants;
  wants.device = "cpu";
  const auto c = choose_torch(wants, cuda_node());
  CHECK(c.device_type == "cpu");
  CHECK(c.backend == "gloo");
  CHECK(device_string(c, 3, cuda_node()) == "cpu");
}

TEST_CASE("TORCH_DEVICE=cpu on a CUDA node: gloo", "[torch_choice]") {
  TorchWants wants;
  wants.env_device = "cpu";
  const auto c = choose_torch(wants, cuda_node());
  CHECK(c.device_type == "cpu");
  CHECK(c.backend == "gloo");
}

TEST_CASE("nothing asked on a CUDA node: cuda, nccl, the local rank's device", "[torch_choice]") {
  const auto c = choose_torch({}, cuda_node());
  CHECK(c.device_type == "cuda");
  CHECK(c.backend == "nccl");
  CHECK(device_string(c, 0, cuda_node()) == "cuda:0");
  CHECK(device_string(c, 5, cuda_node()) == "cuda:1");  // local rank modulo the visible devices
}

TEST_CASE("the option beats TORCH_DEVICE", "[torch_choice]") {
  TorchWants wants;
  wants.device = "cpu";
  wants.env_device = "cuda";
  CHECK(choose_torch(wants, cuda_node()).device_type == "cpu");
}

TEST_CASE("TORCH_BACKEND wins over the device's backend", "[torch_choice]") {
  TorchWants wants;
  wants.env_backend = "gloo";
  const auto c = choose_torch(wants, cuda_node());
  CHECK(c.device_type == "cuda");
  CHECK(c.backend == "gloo");
  SECTION("and the backend option wins over TORCH_BACKEND") {
    wants.backend = "mpi";
    CHECK(choose_torch(wants, cuda_node()).backend == "mpi");
  }
}

TEST_CASE("xpu: xccl, the local rank's tile", "[torch_choice]") {
  DeviceFacts facts;
  facts.has_xpu = true;
  facts.cuda_device_count = 2;  // xpu comes first, as in ezpz
  const auto c = choose_torch({}, facts);
  CHECK(c.device_type == "xpu");
  CHECK(c.backend == "xccl");
  CHECK(device_string(c, 7, facts) == "xpu:7");
  TorchWants wants;
  wants.device = "xpu";
  CHECK(choose_torch(wants, DeviceFacts{}).backend == "xccl");
}

TEST_CASE("nothing on the node, nothing asked: cpu and gloo", "[torch_choice]") {
  const auto c = choose_torch({}, DeviceFacts{});
  CHECK(c.device_type == "cpu");
  CHECK(c.backend == "gloo");
  CHECK(device_string(c, 1, DeviceFacts{}) == "cpu");
  DeviceFacts mps;
  mps.has_mps = true;
  const auto m = choose_torch({}, mps);
  CHECK(m.device_type == "mps");
  CHECK(m.backend == "gloo");
  CHECK(device_string(m, 1, mps) == "mps");
}

TEST_CASE("a named index is kept", "[torch_choice]") {
  TorchWants wants;
  wants.device = "cuda:1";
  const auto c = choose_torch(wants, cuda_node());
  CHECK(c.device_type == "cuda");
  CHECK(c.backend == "nccl");
  CHECK(device_string(c, 3, cuda_node()) == "cuda:1");
  wants.device = "cuda:0";
  CHECK(device_string(choose_torch(wants, cuda_node()), 3, cuda_node()) == "cuda:0");
  SECTION("cuda asked with no device visible: index 0, for libtorch to refuse") {
    TorchWants cuda;
    cuda.device = "cuda";
    CHECK(device_string(choose_torch(cuda, DeviceFacts{}), 2, DeviceFacts{}) == "cuda:0");
  }
}

TEST_CASE("machine names: EZPZ_MACHINE, then the hostname rules, else local", "[torch_choice]") {
  CHECK(builtin_machine_name(host_env("x4102c0s0b0n0", {{"EZPZ_MACHINE", "sunspot"}})) == "sunspot");
  CHECK(builtin_machine_name(host_env("x4102c0s0b0n0", {{"PBS_JOBID", "123.aurora-pbs-0001"}})) == "aurora");
  CHECK(builtin_machine_name(host_env("x3005c0s13b0n0")) == "polaris");  // a guess, as ezpz's
  CHECK(builtin_machine_name(host_env("x3005c0s13b0n0", {{"PBS_O_HOST", "sirius-login-01"}})) == "sirius");
  CHECK(builtin_machine_name(host_env("nid001234", {{"NERSC_HOST", "perlmutter"}})) == "perlmutter");
  CHECK(builtin_machine_name(host_env("nid001234")) == "local");  // shared prefix, no signal, no guess
  CHECK(builtin_machine_name(host_env("Frontier01234")) == "frontier");
  CHECK(builtin_machine_name(host_env("laptop")) == "local");
}

TEST_CASE("machine names agree with MachineSet::builtin() on every built-in machine", "[torch_choice]") {
  auto set = MachineSet::builtin();
  REQUIRE(set);
  std::vector<Env> probes = {host_env("laptop"), host_env("")};
  for (const auto& m : set->profiles()) {
    for (const auto& p : m.match_prefix) {
      probes.push_back(host_env(p + "-node01"));
      probes.push_back(host_env(p + m.match_contains + "01"));
    }
    for (const auto& p : m.shared_prefix) {
      probes.push_back(host_env(p + "1234"));
      for (const auto& [name, text] : m.match_env) {
        probes.push_back(host_env(p + "1234", {{name, "x." + text + "-login"}}));
      }
    }
  }
  for (const auto& env : probes) {
    INFO("hostname " << env.hostname << ", " << env.vars.size() << " variables");
    CHECK(builtin_machine_name(env) == set->identify(env).profile->name);
  }
}
