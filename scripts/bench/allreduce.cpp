// The numbers of issue 6 for libezpz_torch, on every rank (scripts/bench/allreduce.sh launches
// it with `ezpz launch --launcher local -n 4`): how long setup() takes, and all_reduce of
// 64 MB fp32 through the library against a ProcessGroupGloo made directly with c10d over the
// same rendezvous, interleaved so both see the same machine state.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <ezpz/torch.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 10;
  const std::int64_t mb = argc > 2 ? std::atoll(argv[2]) : 64;
  auto t0 = std::chrono::steady_clock::now();
  auto info = ezpz::setup();
  const double setup_s = seconds_since(t0);
  auto slowest = torch::tensor({setup_s}, torch::kFloat64);
  ezpz::all_reduce(slowest, ezpz::ReduceOp::max);

  // c10d directly: a client of the same TCPStore, its own key space, default gloo options.
  c10d::TCPStoreOptions so;
  so.port = static_cast<std::uint16_t>(std::atoi(std::getenv("MASTER_PORT")));
  auto store = c10::make_intrusive<c10d::TCPStore>(std::getenv("MASTER_ADDR"), so);
  auto options = c10d::ProcessGroupGloo::Options::create();
  options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  auto direct = c10::make_intrusive<c10d::ProcessGroupGloo>(
      c10::make_intrusive<c10d::PrefixStore>("bench-direct", store), info.rank, info.world_size, options);

  auto tensor = torch::ones({mb * (1 << 20) / 4}, torch::kFloat32);
  std::vector<double> lib;
  std::vector<double> raw;
  for (int i = -2; i < iters; ++i) {  // two warm-up rounds
    ezpz::barrier();
    auto t = std::chrono::steady_clock::now();
    ezpz::all_reduce(tensor);
    const double a = seconds_since(t);
    ezpz::barrier();
    std::vector<at::Tensor> tensors = {tensor};
    t = std::chrono::steady_clock::now();
    direct->allreduce(tensors)->wait();
    const double b = seconds_since(t);
    if (i >= 0) {
      lib.push_back(a);
      raw.push_back(b);
    }
    tensor.fill_(1.0f);
  }
  if (info.rank == 0) {
    const double l = median(lib);
    const double r = median(raw);
    std::printf("ranks=%d setup()=%.3f s (slowest rank; rank 0 %.3f s)\n", info.world_size, slowest.item<double>(),
                setup_s);
    std::printf(
        "all_reduce %lld MB fp32 over gloo, median of %d: ezpz %.1f ms, c10d ProcessGroupGloo %.1f ms, "
        "ezpz/c10d = %.3f\n",
        static_cast<long long>(mb), iters, l * 1e3, r * 1e3, l / r);
  }
  direct.reset();
  ezpz::cleanup();
  return 0;
}
