// Multi-rank checks of libezpz_torch, run on every rank by tests/torch/run_torch_tests.py
// (through `ezpz launch --launcher local -n N`). Usage: ezpz_torch_checks SCENARIO.
// Each failed check prints "FAIL rank R: ..." and the program exits 1.
#include <array>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <ezpz/torch.hpp>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    std::cerr << "FAIL rank " << ezpz::get_rank() << ": " << what << std::endl;
  }
}

std::string str(const std::vector<int>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    out += (i == 0 ? "" : ",") + std::to_string(v[i]);
  }
  return out + "]";
}

bool close(const torch::Tensor& a, const torch::Tensor& b, double tol = 1e-5) {
  return a.sizes() == b.sizes() && torch::allclose(a, b, tol, tol);
}

template <class F>
void expect_error(F&& f, const std::string& needle, const std::string& what) {
  try {
    f();
    check(false, what + ": no error");
  } catch (const std::exception& e) {
    check(std::string(e.what()).find(needle) != std::string::npos,
          what + ": error \"" + e.what() + "\" lacks \"" + needle + "\"");
  }
}

/// The group of `rank` among `groups`.
std::vector<int> find(const std::vector<std::vector<int>>& groups, int rank) {
  for (const auto& g : groups) {
    for (int r : g) {
      if (r == rank) {
        return g;
      }
    }
  }
  return {rank};  // not listed: a singleton
}

using Table = std::map<std::string, std::vector<std::vector<int>>>;

/// Expected layouts (ezpz's tables, written out by hand).
std::map<std::string, Table> expected_layouts(int world) {
  if (world == 4) {
    return {
        {"tp2", {{"tp", {{0, 1}, {2, 3}}}, {"dp", {{0, 2}, {1, 3}}}, {"pp", {}}, {"cp", {}}}},
        {"tp2pp2", {{"tp", {{0, 1}, {2, 3}}}, {"pp", {{0, 2}, {1, 3}}}, {"dp", {}}, {"cp", {}}}},
        {"tp2cp2", {{"tp", {{0, 1}, {2, 3}}}, {"cp", {{0, 2}, {1, 3}}}, {"dp", {}}, {"pp", {}}}},
    };
  }
  return {
      {"tp2", {{"tp", {{0, 1}, {2, 3}, {4, 5}, {6, 7}}}, {"dp", {{0, 2, 4, 6}, {1, 3, 5, 7}}}, {"pp", {}}, {"cp", {}}}},
      {"tp2pp2",
       {{"tp", {{0, 1}, {2, 3}, {4, 5}, {6, 7}}},
        {"pp", {{0, 2}, {1, 3}, {4, 6}, {5, 7}}},
        {"dp", {{0, 4}, {1, 5}, {2, 6}, {3, 7}}},
        {"cp", {}}}},
      {"tp2cp2",
       {{"tp", {{0, 1}, {2, 3}, {4, 5}, {6, 7}}},
        {"cp", {{0, 2}, {1, 3}, {4, 6}, {5, 7}}},
        {"dp", {{0, 4}, {1, 5}, {2, 6}, {3, 7}}},
        {"pp", {}}}},
  };
}

void check_groups() {
  const int rank = ezpz::get_rank();
  const int world = ezpz::get_world_size();
  check(ezpz::tp::get_tensor_parallel_rank() == 0 && ezpz::tp::get_tensor_parallel_world_size() == 1,
        "tp rank/size default to 0/1 before initialization");
  expect_error([] { (void)ezpz::tp::get_tensor_parallel_group(); }, "not initialized", "group before init");
  const std::map<std::string, std::array<int, 3>> sizes = {
      {"tp2", {2, 1, 1}}, {"tp2pp2", {2, 2, 1}}, {"tp2cp2", {2, 1, 2}}};
  for (const auto& [name, table] : expected_layouts(world)) {
    const auto& s = sizes.at(name);
    ezpz::tp::initialize_tensor_parallel(s[0], s[1], s[2]);
    const std::map<std::string, ezpz::Group> groups = {{"tp", ezpz::tp::get_tensor_parallel_group()},
                                                       {"dp", ezpz::tp::get_data_parallel_group()},
                                                       {"pp", ezpz::tp::get_pipeline_parallel_group()},
                                                       {"cp", ezpz::tp::get_context_parallel_group()}};
    for (const auto& [dim, group] : groups) {
      const auto want = find(table.at(dim), rank);
      check(group.members() == want, name + " " + dim + " group " + str(group.members()) + ", want " + str(want));
      // The group really connects those ranks: the sum of their ranks comes back.
      auto t = torch::tensor({static_cast<double>(rank)}, torch::kFloat64);
      group.all_reduce(t);
      int sum = 0;
      for (int r : want) {
        sum += r;
      }
      check(t.item<double>() == sum, name + " " + dim + " all_reduce gave " + std::to_string(t.item<double>()));
    }
    check(ezpz::tp::get_tensor_parallel_src_rank() == (rank / 2) * 2, name + " src rank");
    expect_error([&] { ezpz::tp::initialize_tensor_parallel(s[0], s[1], s[2]); }, "already initialized",
                 name + " double init");
    ezpz::tp::destroy_tensor_parallel();
    check(!ezpz::tp::tensor_parallel_is_initialized(), name + " destroy");
  }
  expect_error([&] { ezpz::tp::initialize_tensor_parallel(2, 3); },
               "world size " + std::to_string(world) + " is not divisible by tp*pp*cp = 2*3*1 = 6", "bad sizes");
  check(!ezpz::tp::tensor_parallel_is_initialized(), "failed init leaves nothing behind");
}

/// TP layers against torch::nn layers holding the same weights: outputs and gradients.
void check_tp_layers() {
  const int world = ezpz::get_world_size();
  ezpz::tp::initialize_tensor_parallel(world);
  const int tp = ezpz::tp::get_tensor_parallel_world_size();
  const int r = ezpz::tp::get_tensor_parallel_rank();
  torch::manual_seed(1234);  // the same reference and input on every rank
  const int64_t in = 8 * tp;
  const int64_t out = 4 * tp;
  torch::nn::Linear ref1(in, out);
  torch::nn::Linear ref2(out, in);
  auto x = torch::randn({5, in});
  auto target = torch::randn({5, in});

  // Column (gathered) then Row: the Megatron MLP pair, and each layer on its own.
  ezpz::tp::ColumnParallelLinear col(in, out, true, true);
  ezpz::tp::RowParallelLinear row(out, in, true, false);
  col->load_full(ref1->weight, ref1->bias);
  row->load_full(ref2->weight, ref2->bias);
  auto xr = x.clone().requires_grad_(true);
  auto xt = x.clone().requires_grad_(true);
  auto yr = ref2(torch::relu(ref1(xr)));
  auto yt = row(torch::relu(col(xt)));
  check(close(yr, yt), "column+row forward matches nn::Linear");
  (yr - target).pow(2).sum().backward();
  (yt - target).pow(2).sum().backward();
  check(close(xr.grad(), xt.grad()), "input gradient matches");
  const auto rows = out / tp;
  check(close(ref1->weight.grad().narrow(0, r * rows, rows), col->weight.grad()), "column weight grad shard");
  check(close(ref1->bias.grad().narrow(0, r * rows, rows), col->bias.grad()), "column bias grad shard");
  check(close(ref2->weight.grad().narrow(1, r * rows, rows), row->weight.grad()), "row weight grad shard");
  check(close(ref2->bias.grad(), row->bias.grad()), "row bias grad");

  // Column without gather feeding Row with parallel input (no scatter/gather in between).
  ezpz::tp::ColumnParallelLinear col2(in, out, true, false);
  ezpz::tp::RowParallelLinear row2(out, in, true, true);
  col2->load_full(ref1->weight, ref1->bias);
  row2->load_full(ref2->weight, ref2->bias);
  auto xp = x.clone().requires_grad_(true);
  auto yp = row2(torch::relu(col2(xp)));
  check(close(yr, yp), "parallel-input pair forward matches");
  (yp - target).pow(2).sum().backward();
  check(close(xr.grad(), xp.grad()), "parallel-input pair input gradient");
  check(close(ref1->weight.grad().narrow(0, r * rows, rows), col2->weight.grad()), "pair column weight grad");

  // Vocabulary-parallel embedding.
  const int64_t vocab = 6 * tp;
  torch::nn::Embedding ref_emb(vocab, 3);
  ezpz::tp::VocabParallelEmbedding emb(vocab, 3);
  emb->load_full(ref_emb->weight);
  auto ids = torch::randint(0, vocab, {4, 7});
  auto er = ref_emb(ids);
  auto et = emb(ids);
  check(close(er, et), "embedding forward matches");
  auto w = torch::randn({4, 7, 3});
  (er * w).sum().backward();
  (et * w).sum().backward();
  const auto per = vocab / tp;
  check(close(ref_emb->weight.grad().narrow(0, r * per, per), emb->weight.grad()), "embedding grad shard");

  // The four mappings directly: scatter then gather is the identity, gradients included.
  auto z = torch::randn({3, 2 * tp}).requires_grad_(true);
  auto back = ezpz::tp::gather_from_tensor_parallel_region(ezpz::tp::scatter_to_tensor_parallel_region(z));
  check(close(back, z), "gather(scatter(x)) == x");
  back.sum().backward();
  check(close(z.grad(), torch::ones_like(z)), "scatter/gather backward");
  auto c = torch::randn({2, 2}).requires_grad_(true);
  auto red = ezpz::tp::reduce_from_tensor_parallel_region(ezpz::tp::copy_to_tensor_parallel_region(c));
  check(close(red, c * tp), "reduce(copy(x)) == tp * x");
  red.sum().backward();
  check(close(c.grad(), torch::full_like(c, tp)), "copy backward all-reduces");
  ezpz::tp::destroy_tensor_parallel();
}

/// Data parallel equals single-process training on the concatenated batch.
void check_data_parallel(bool overlap) {
  const int rank = ezpz::get_rank();
  const int world = ezpz::get_world_size();
  torch::manual_seed(99 + rank);  // different initial weights per rank: the broadcast must fix them
  auto model = torch::nn::Sequential(torch::nn::Linear(6, 16), torch::nn::Tanh(), torch::nn::Linear(16, 3));
  ezpz::DataParallelOptions options;
  options.bucket_bytes = 256;  // several buckets
  options.overlap = overlap;
  ezpz::DistributedDataParallel ddp(model.ptr(), ezpz::world(), options);
  check(ddp.num_buckets() > 1, "several buckets");
  auto reference = torch::nn::Sequential(torch::nn::Linear(6, 16), torch::nn::Tanh(), torch::nn::Linear(16, 3));
  {
    torch::NoGradGuard guard;
    auto src = model->parameters();
    auto dst = reference->parameters();
    for (std::size_t i = 0; i < src.size(); ++i) {
      dst[i].copy_(src[i]);
    }
  }
  torch::optim::SGD opt(model->parameters(), 0.1);
  torch::optim::SGD ref_opt(reference->parameters(), 0.1);
  for (int step = 0; step < 4; ++step) {
    torch::manual_seed(1000 + step);
    auto x = torch::randn({4 * world, 6});
    auto y = torch::randn({4 * world, 3});
    opt.zero_grad();
    auto mine = torch::mse_loss(model->forward(x.narrow(0, 4 * rank, 4)), y.narrow(0, 4 * rank, 4));
    mine.backward();
    ddp.synchronize();
    opt.step();
    ref_opt.zero_grad();
    torch::mse_loss(reference->forward(x), y).backward();
    ref_opt.step();
  }
  auto a = model->parameters();
  auto b = reference->parameters();
  for (std::size_t i = 0; i < a.size(); ++i) {
    check(close(a[i], b[i], 1e-5), std::string(overlap ? "overlapped" : "plain") + " DP parameter " +
                                       std::to_string(i) + " equals single-process training");
  }
}

void check_collectives() {
  const int rank = ezpz::get_rank();
  const int world = ezpz::get_world_size();
  auto t = torch::full({3}, static_cast<double>(rank + 1), torch::kFloat64);
  ezpz::all_reduce(t, ezpz::ReduceOp::avg);
  check(close(t, torch::full({3}, (world + 1) / 2.0, torch::kFloat64)), "all_reduce avg");
  auto m = torch::tensor({static_cast<double>(rank)}, torch::kFloat64);
  ezpz::all_reduce(m, ezpz::ReduceOp::max);
  check(m.item<double>() == world - 1, "all_reduce max");
  auto b = torch::tensor({rank == world - 1 ? 42.0 : 0.0}, torch::kFloat64);
  ezpz::broadcast(b, world - 1);
  check(b.item<double>() == 42.0, "broadcast from the last rank");
  auto parts = ezpz::world().all_gather(torch::tensor({rank * 10}, torch::kInt64));
  for (int r = 0; r < world; ++r) {
    check(parts[static_cast<std::size_t>(r)].item<int64_t>() == r * 10, "all_gather order");
  }
  ezpz::barrier();
  const auto& info = ezpz::dist_info();
  check(info.backend == "gloo" && info.device_type == "cpu", "gloo on cpu");
  check(info.local_rank == rank && info.local_world_size == world && info.num_nodes == 1, "local ranks on one host");
  check(ezpz::rank_seed(7, 2, 1) == 7 * 3 * 2, "seed rule");
  expect_error([] { ezpz::setup(); }, "already called", "second setup");
}

/// Whether `t` holds the same values on every rank.
bool same_on_all_ranks(const torch::Tensor& t) {
  auto lo = t.detach().clone();
  auto hi = t.detach().clone();
  ezpz::all_reduce(lo, ezpz::ReduceOp::min);
  ezpz::all_reduce(hi, ezpz::ReduceOp::max);
  return torch::equal(lo, hi);
}

/// Python ezpz's names: setup_torch (main called it), get_dist_info, get_num_nodes,
/// get_gpus_per_node, get_machine, synchronize, wrap_model.
void check_names(const ezpz::DistInfo& from_setup_torch) {
  const auto& info = ezpz::get_dist_info();
  check(&info == &ezpz::dist_info(), "get_dist_info is dist_info");
  check(info.rank == from_setup_torch.rank && info.world_size == from_setup_torch.world_size &&
            info.backend == from_setup_torch.backend && info.device_type == from_setup_torch.device_type,
        "setup_torch returned what get_dist_info holds");
  check(info.backend == (info.world_size > 1 ? "gloo" : "") && info.device_type == "cpu", "cpu and gloo here");
  check(ezpz::get_num_nodes() == 1, "one node, got " + std::to_string(ezpz::get_num_nodes()));
  const int gpus = torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  check(ezpz::get_gpus_per_node() == gpus,
        "gpus per node: got " + std::to_string(ezpz::get_gpus_per_node()) + ", want " + std::to_string(gpus));
  check(!ezpz::get_machine().empty(), "a machine name");
  if (ezpz::get_rank() == 0) {
    std::cout << "machine=" << ezpz::get_machine() << std::endl;
  }
  ezpz::synchronize();
  ezpz::synchronize(torch::Device(torch::kCPU));
  expect_error([] { ezpz::setup_torch(); }, "already called", "second setup_torch");

  torch::manual_seed(7 + ezpz::get_rank());  // different weights per rank: wrap_model broadcasts rank 0's
  auto model = torch::nn::Sequential(torch::nn::Linear(4, 8), torch::nn::Tanh(), torch::nn::Linear(8, 2));
  auto ddp = ezpz::wrap_model(model);  // the ModuleHolder overload, strategy "ddp"
  check(ddp.group().size() == ezpz::get_world_size(), "wrap_model's group is the world");
  const auto before = model->parameters()[0].detach().clone();
  check(same_on_all_ranks(before), "wrap_model broadcast the parameters");
  torch::optim::SGD opt(model->parameters(), 0.1);
  auto x = torch::randn({3, 4});  // a different batch per rank
  torch::mse_loss(model->forward(x), torch::zeros({3, 2})).backward();
  ddp.synchronize();
  opt.step();
  for (const auto& p : model->parameters()) {
    check(same_on_all_ranks(p.grad()) && same_on_all_ranks(p), "one DDP step keeps the replicas equal");
  }
  check(!torch::equal(before, model->parameters()[0]), "the step changed the parameters");

  ezpz::WrapOptions fsdp;
  fsdp.strategy = "fsdp";
  expect_error([&] { (void)ezpz::wrap_model(model.ptr(), fsdp); },
               "wrap_model: FSDP is not in libezpz_torch yet: use ddp", "wrap_model fsdp");
  ezpz::WrapOptions other;
  other.strategy = "zero3";
  expect_error([&] { (void)ezpz::wrap_model(model.ptr(), other); }, "is not one of ddp, fsdp", "wrap_model zero3");
}

/// The same collectives, a TP pair and DDP steps on the device setup() chose (TORCH_DEVICE,
/// TORCH_BACKEND; what the node has): cpu and gloo in CI, cuda with nccl or gloo on a GPU node
/// (scripts/gpu-check.sh). Rank 0 prints the device and backend it ran on.
void check_on_device() {
  const auto& info = ezpz::dist_info();
  const auto dev = info.device;
  const int rank = info.rank;
  const int world = info.world_size;
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(dev);
  auto t = torch::full({1024}, static_cast<float>(rank + 1), f32);
  ezpz::all_reduce(t);
  check(t.device() == dev && close(t.cpu(), torch::full({1024}, static_cast<float>(world * (world + 1)) / 2.0F)),
        "all_reduce sum");
  auto m = torch::full({2}, static_cast<float>(rank), f32);
  ezpz::all_reduce(m, ezpz::ReduceOp::max);
  check(m.cpu()[0].item<float>() == static_cast<float>(world - 1), "all_reduce max");
  auto b = torch::full({4}, rank == world - 1 ? 7.0F : 0.0F, f32);
  ezpz::broadcast(b, world - 1);
  check(close(b.cpu(), torch::full({4}, 7.0F)), "broadcast from the last rank");
  auto parts = ezpz::world().all_gather(torch::full({2}, static_cast<float>(rank * 10), f32));
  for (int r = 0; r < world; ++r) {
    check(parts.at(static_cast<std::size_t>(r)).cpu()[1].item<float>() == static_cast<float>(r * 10),
          "all_gather order");
  }
  // A TP pair on the device against nn::Linear with the same weights.
  ezpz::tp::initialize_tensor_parallel(world);
  torch::manual_seed(1234);
  const int64_t in = 8 * world;
  const int64_t out = 4 * world;
  torch::nn::Linear ref1(in, out);
  torch::nn::Linear ref2(out, in);
  ref1->to(dev);
  ref2->to(dev);
  ezpz::tp::ColumnParallelLinear col(in, out, true, false);
  ezpz::tp::RowParallelLinear row(out, in, true, true);
  col->to(dev);
  row->to(dev);
  col->load_full(ref1->weight, ref1->bias);
  row->load_full(ref2->weight, ref2->bias);
  auto x = torch::randn({5, in}, f32);
  auto xr = x.clone().requires_grad_(true);
  auto xt = x.clone().requires_grad_(true);
  auto yr = ref2(torch::relu(ref1(xr)));
  auto yt = row(torch::relu(col(xt)));
  check(yt.device() == dev && close(yr.cpu(), yt.cpu(), 1e-4), "TP pair forward on the device");
  yr.sum().backward();
  yt.sum().backward();
  check(close(xr.grad().cpu(), xt.grad().cpu(), 1e-4), "TP pair input gradient on the device");
  ezpz::tp::destroy_tensor_parallel();
  // DDP: a few steps keep the replicas equal and move the parameters.
  torch::manual_seed(99 + rank);
  auto model = torch::nn::Sequential(torch::nn::Linear(6, 16), torch::nn::Tanh(), torch::nn::Linear(16, 3));
  model->to(dev);
  ezpz::DistributedDataParallel ddp(model.ptr(), ezpz::world());
  const auto before = model->parameters()[0].detach().clone();
  torch::optim::SGD opt(model->parameters(), 0.1);
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    torch::mse_loss(model->forward(torch::randn({4, 6}, f32)), torch::zeros({4, 3}, f32)).backward();
    ddp.synchronize();
    opt.step();
  }
  for (const auto& p : model->parameters()) {
    check(p.device() == dev && same_on_all_ranks(p), "DDP on the device keeps the replicas equal");
  }
  check(!torch::equal(before, model->parameters()[0]), "the DDP steps changed the parameters");
  ezpz::synchronize();
  if (rank == 0) {
    std::cout << "device=" << dev.str() << " backend=" << (info.backend.empty() ? "none" : info.backend)
              << " world=" << world << std::endl;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  try {
    ezpz::SetupOptions options;
    options.seed = 1;
    if (scenario == "names") {
      options.device = "cpu";  // gloo, whatever the node has
      check_names(ezpz::setup_torch(options));
    } else {
      ezpz::setup(options);
    }
    if (scenario == "names") {
      // (checked above)
    } else if (scenario == "collectives") {
      check_collectives();
    } else if (scenario == "groups") {
      check_groups();
    } else if (scenario == "tp_layers") {
      check_tp_layers();
    } else if (scenario == "data_parallel") {
      check_data_parallel(true);
      check_data_parallel(false);
    } else if (scenario == "on_device") {
      check_on_device();
    } else if (scenario == "setup_only") {
      // (the rendezvous tests: nothing to do once set up)
    } else {
      std::cerr << "usage: ezpz_torch_checks collectives|groups|tp_layers|data_parallel|names|on_device|setup_only\n";
      return 2;
    }
    ezpz::cleanup();
  } catch (const std::exception& e) {
    std::cerr << "ERROR rank " << ezpz::get_rank() << ": " << e.what() << std::endl;
    return 1;
  }
  if (failures == 0 && ezpz::get_rank() == 0) {
    std::cout << "OK " << scenario << " on " << ezpz::get_world_size() << " ranks" << std::endl;
  }
  return failures == 0 ? 0 : 1;
}
