// ezpz-test-train: the program `ezpz test` launches on every rank. It trains ezpz's smoke
// MLP (784 -> 512, 256, 128 -> 10) on synthetic MNIST-shaped data (a fixed random teacher
// labels random images, so the loss can fall) with data parallel and optional TP/PP/CP
// groups, prints `iter= loss= dt=` lines and a summary, and fails when the loss does not
// fall on some rank or the replicas' parameters differ.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <ezpz/torch.hpp>

namespace {

struct Args {
  int train_iters = 200;
  int batch_size = 128;
  std::string dtype = "auto";
  int tp = 1;
  int pp = 1;
  int cp = 1;
  int print_freq = 10;
  double lr = 1e-3;
  std::uint64_t seed = 1337;
  std::string outdir = "outputs/ezpz-test";
  std::string json_out;
};

const char* kUsage =
    "usage: ezpz-test-train [--train-iters N] [--batch-size N] [--dtype auto|fp32|bf16|fp16] [--tp N] [--pp N]\n"
    "                       [--cp N] [--print-freq N] [--lr X] [--seed N] [--outdir DIR] [--json-out FILE]\n";

bool parse(int argc, char** argv, Args& a, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    std::string value;
    if (auto eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (flag == "-h" || flag == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      error = flag + " needs a value";
      return false;
    }
    try {
      if (flag == "--train-iters") {
        a.train_iters = std::stoi(value);
      } else if (flag == "--batch-size") {
        a.batch_size = std::stoi(value);
      } else if (flag == "--dtype") {
        a.dtype = value;
      } else if (flag == "--tp") {
        a.tp = std::stoi(value);
      } else if (flag == "--pp") {
        a.pp = std::stoi(value);
      } else if (flag == "--cp") {
        a.cp = std::stoi(value);
      } else if (flag == "--print-freq") {
        a.print_freq = std::stoi(value);
      } else if (flag == "--lr") {
        a.lr = std::stod(value);
      } else if (flag == "--seed") {
        a.seed = std::stoull(value);
      } else if (flag == "--outdir") {
        a.outdir = value;
      } else if (flag == "--json-out") {
        a.json_out = value;
      } else {
        error = "unknown option " + flag;
        return false;
      }
    } catch (const std::exception&) {
      error = flag + " " + value + " is not a number";
      return false;
    }
  }
  if (a.train_iters < 1 || a.batch_size < 1 || a.print_freq < 1) {
    error = "--train-iters, --batch-size and --print-freq must be at least 1";
    return false;
  }
  return true;
}

/// Megatron's pairing: a column-parallel layer feeds a row-parallel one, so each pair needs
/// one all-reduce forward and one backward.
struct MlpImpl : torch::nn::Module {
  MlpImpl()
      : fc1(register_module("fc1", ezpz::tp::ColumnParallelLinear(784, 512, true, false))),
        fc2(register_module("fc2", ezpz::tp::RowParallelLinear(512, 256, true, true))),
        fc3(register_module("fc3", ezpz::tp::ColumnParallelLinear(256, 128, true, false))),
        fc4(register_module("fc4", ezpz::tp::RowParallelLinear(128, 10, true, true))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(fc2(torch::relu(fc1(x))));
    return fc4(torch::relu(fc3(x)));
  }
  ezpz::tp::ColumnParallelLinear fc1;
  ezpz::tp::RowParallelLinear fc2;
  ezpz::tp::ColumnParallelLinear fc3;
  ezpz::tp::RowParallelLinear fc4;
};
TORCH_MODULE(Mlp);

torch::Dtype parse_dtype(const std::string& name, const std::string& device_type) {
  if (name == "auto") {
    return device_type == "cpu" ? torch::kFloat32 : torch::kBFloat16;
  }
  if (name == "fp32" || name == "float32") {
    return torch::kFloat32;
  }
  if (name == "bf16" || name == "bfloat16") {
    return torch::kBFloat16;
  }
  if (name == "fp16" || name == "float16") {
    return torch::kFloat16;
  }
  throw std::runtime_error("--dtype " + name + " is not one of auto, fp32, bf16, fp16");
}

std::string json_list(const std::vector<int>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    out += (i == 0 ? "" : ", ") + std::to_string(v[i]);
  }
  return out + "]";
}

/// What a run has once its groups are set up.
struct Setup {
  ezpz::DistInfo info;
  int tp = 1;
  double setup_s = 0;
  torch::Dtype dtype = torch::kFloat32;
  std::ostream* log = &std::cout;
};

Setup set_up(const Args& a) {
  const auto t_setup = std::chrono::steady_clock::now();
  ezpz::SetupOptions options;
  options.seed = a.seed;
  options.tensor_parallel_size = a.tp;
  options.pipeline_parallel_size = a.pp;
  options.context_parallel_size = a.cp;
  Setup s{ezpz::setup(options)};
  if (!ezpz::tp::tensor_parallel_is_initialized()) {
    ezpz::tp::initialize_tensor_parallel(1);  // report the (trivial) groups too
  }
  s.setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_setup).count();
  if (s.info.device_type == "cpu" && std::getenv("OMP_NUM_THREADS") == nullptr) {
    // Ranks sharing a host share its cores: do not oversubscribe them.
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    torch::set_num_threads(std::max(1, cores / std::max(1, s.info.local_world_size)));
  }
  s.tp = ezpz::tp::get_tensor_parallel_world_size();
  s.log = a.json_out.empty() ? &std::cout : &std::cerr;
  s.dtype = parse_dtype(a.dtype, s.info.device_type);
  if (s.info.rank == 0) {
    *s.log << "ezpz test: world=" << s.info.world_size << " tp=" << s.tp
           << " pp=" << ezpz::tp::get_pipeline_parallel_world_size()
           << " cp=" << ezpz::tp::get_context_parallel_world_size()
           << " dp=" << ezpz::tp::get_data_parallel_world_size() << " device=" << s.info.device_type
           << " backend=" << (s.info.backend.empty() ? "none" : s.info.backend) << " dtype=" << a.dtype
           << " setup=" << s.setup_s << "s engine=cpp" << std::endl;
  }
  return s;
}

/// Replicas: every rank with the same TP coordinate holds the same shard (the model uses
/// neither pipeline nor context parallelism), so gradients are averaged over all of them.
ezpz::Group replica_group(int tp, int world) {
  ezpz::Group replicas;
  for (int t = 0; t < tp; ++t) {
    std::vector<int> members;
    for (int r = t; r < world; r += tp) {
      members.push_back(r);
    }
    auto g = ezpz::new_group(members);
    if (g.valid()) {
      replicas = g;
    }
  }
  return replicas;
}

/// Trains the model; returns this rank's loss per iteration, and puts each iteration's timed step
/// (forward, backward, the gradients' all-reduce and the optimizer) in `dts`.
std::vector<double> train(const Args& a, const Setup& s, Mlp& model, ezpz::DistributedDataParallel& ddp,
                          ezpz::History& history, std::vector<double>& dts) {
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(a.lr));
  // The teacher is the same on every rank; each TP group draws its own batches.
  torch::manual_seed(a.seed);
  auto teacher = torch::randn({784, 10});
  const int replica = s.info.rank / s.tp;
  std::vector<double> losses;
  for (int iter = 1; iter <= a.train_iters; ++iter) {
    torch::manual_seed(a.seed * 7919 + static_cast<std::uint64_t>(iter) * 104729 + static_cast<std::uint64_t>(replica));
    auto x = torch::randn({a.batch_size, 784});
    auto y = x.matmul(teacher).argmax(1).to(s.info.device);
    x = x.to(s.info.device, s.dtype);
    const auto start = std::chrono::steady_clock::now();
    opt.zero_grad();
    auto logits = model->forward(x).to(torch::kFloat32);
    auto loss = torch::nn::functional::cross_entropy(logits, y);
    loss.backward();
    ddp.synchronize();
    opt.step();
    const double l = loss.item<double>();
    const double acc = logits.argmax(1).eq(y).to(torch::kFloat32).mean().item<double>();
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    losses.push_back(l);
    dts.push_back(dt);
    auto line = history.update({{"iter", iter}, {"loss", l}, {"accuracy", acc}, {"dt", dt}});
    if (s.info.rank == 0 && (iter % a.print_freq == 0 || iter == 1 || iter == a.train_iters)) {
      *s.log << line << std::endl;
    }
  }
  return losses;
}

/// The median timed step after the first (which pays the device's warm-up: kernels loaded, a
/// CUDA context's libraries), or the first when it is the only one.
double steady_step_s(std::vector<double> dts) {
  if (dts.size() > 1) {
    dts.erase(dts.begin());
  }
  std::nth_element(dts.begin(), dts.begin() + static_cast<std::ptrdiff_t>(dts.size() / 2), dts.end());
  return dts[dts.size() / 2];
}

/// The run's verdicts, agreed by every rank.
struct Verdict {
  bool judged = false;  // at least 10 iterations
  bool fell = false;    // the loss fell on every rank
  bool identical = false;
};

/// The loss fell on every rank (the mean of the first 5 against the last 5, judged over at
/// least 10 iterations); replicas hold identical parameters.
Verdict check(const std::vector<double>& losses, Mlp& model, ezpz::Group& replicas) {
  Verdict v;
  v.judged = losses.size() >= 10;
  const std::size_t k = std::min<std::size_t>(5, losses.size());
  double first = 0;
  double last = 0;
  for (std::size_t i = 0; i < k; ++i) {
    first += losses[i] / static_cast<double>(k);
    last += losses[losses.size() - 1 - i] / static_cast<double>(k);
  }
  auto fell = torch::tensor({!v.judged || last < first ? 1.0 : 0.0}, torch::kFloat64);
  ezpz::all_reduce(fell, ezpz::ReduceOp::min);
  double checksum = 0;
  for (const auto& p : model->parameters()) {
    checksum += p.detach().to(torch::kFloat64).abs().sum().item<double>();
  }
  auto lo = torch::tensor({checksum}, torch::kFloat64);
  auto hi = lo.clone();
  replicas.all_reduce(lo, ezpz::ReduceOp::min);
  replicas.all_reduce(hi, ezpz::ReduceOp::max);
  auto identical = torch::tensor({lo.item<double>() == hi.item<double>() ? 1.0 : 0.0}, torch::kFloat64);
  ezpz::all_reduce(identical, ezpz::ReduceOp::min);
  v.fell = fell.item<double>() > 0;
  v.identical = identical.item<double>() > 0;
  return v;
}

/// --json-out: per-rank groups and losses (gathered on every rank; formatted for rank 0, "" elsewhere).
std::string json_report(const std::vector<double>& losses, bool writer) {
  auto all_losses = ezpz::world().all_gather(torch::tensor(losses, torch::kFloat64));
  std::vector<ezpz::Group> groups = {ezpz::tp::get_tensor_parallel_group(), ezpz::tp::get_pipeline_parallel_group(),
                                     ezpz::tp::get_context_parallel_group(), ezpz::tp::get_data_parallel_group()};
  std::vector<std::int64_t> mine;
  for (const auto& g : groups) {
    mine.insert(mine.end(), g.members().begin(), g.members().end());
  }
  auto all_groups = ezpz::world().all_gather(torch::tensor(mine, torch::kInt64));
  if (!writer) {
    return "";
  }
  const char* names[] = {"tp", "pp", "cp", "dp"};
  std::ostringstream json;
  json.precision(9);
  const auto world = all_groups.size();
  json << "{\"world_size\": " << world << ", \"ranks\": [";
  for (std::size_t r = 0; r < world; ++r) {
    const auto& g = all_groups[r];
    json << (r == 0 ? "" : ", ") << "{\"rank\": " << r << ", \"groups\": {";
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < groups.size(); ++d) {
      std::vector<int> members;
      for (int i = 0; i < groups[d].size(); ++i) {
        members.push_back(static_cast<int>(g[offset + i].item<std::int64_t>()));
      }
      offset += groups[d].size();
      json << (d == 0 ? "" : ", ") << "\"" << names[d] << "\": " << json_list(members);
    }
    json << "}, \"loss\": [";
    const auto& l = all_losses[r];
    for (std::int64_t i = 0; i < l.numel(); ++i) {
      json << (i == 0 ? "" : ", ") << l[i].item<double>();
    }
    json << "]}";
  }
  json << "]}\n";
  return json.str();
}

int run(const Args& a) {
  // 1. Process groups, threads and the banner.
  const Setup s = set_up(a);
  ezpz::Group replicas = replica_group(s.tp, s.info.world_size);
  Mlp model;
  model->to(s.info.device, s.dtype);
  ezpz::DistributedDataParallel ddp(model, replicas);
  // 2. Train.
  ezpz::History history(ezpz::HistoryOptions{a.outdir + "/history", true, true});
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<double> dts;
  const auto losses = train(a, s, model, ddp, history, dts);
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // 3. Judge, agreeing across ranks (collectives: every rank takes part).
  const Verdict v = check(losses, model, replicas);
  const std::string json = a.json_out.empty() ? std::string() : json_report(losses, s.info.rank == 0);
  const auto run_dir = history.finalize();
  // 4. Report (rank 0).
  if (s.info.rank == 0) {
    *s.log << history.plot("loss", 60, 10);
    *s.log << "summary: iters=" << a.train_iters << " world=" << s.info.world_size << " loss " << losses.front()
           << " -> " << losses.back()
           << (!v.judged ? " (not judged: fewer than 10 iterations)"
               : v.fell  ? " (fell on every rank)"
                         : " (DID NOT FALL on some rank)")
           << ", parameters " << (v.identical ? "identical" : "DIFFER") << " across replicas"
           << ", train time " << total_s << " s (" << total_s / a.train_iters << " s/iter; a step "
           << steady_step_s(dts) * 1e3 << " ms median, the first " << dts.front() * 1e3 << " ms), setup " << s.setup_s
           << " s, outputs in " << run_dir << std::endl;
    if (!a.json_out.empty()) {
      std::ofstream(a.json_out) << json;
    }
  }
  ezpz::cleanup();
  return v.fell && v.identical ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  std::string error;
  if (!parse(argc, argv, args, error)) {
    std::cerr << "ezpz-test-train: " << error << "\n" << kUsage;
    return 2;
  }
  try {
    return run(args);
  } catch (const std::exception& e) {
    std::string what = e.what();
    std::cerr << "ezpz-test-train: error: " << what.substr(0, what.find('\n')) << std::endl;
    return 1;
  }
}
