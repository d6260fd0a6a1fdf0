// Tensor-parallel mappings and layers, data parallel training and History, all on the
// public Group API (dist.cpp owns c10d).
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>

#include <ezpz/torch.hpp>

#include "core/train/history.hpp"

namespace ezpz {
namespace {

[[noreturn]] void fail(const std::string& message) {
  throw std::runtime_error("ezpz: " + message);
}

Group tp_group() {
  return tp::tensor_parallel_is_initialized() ? tp::get_tensor_parallel_group() : world();
}

std::int64_t divide(std::int64_t n, int parts, const char* what) {
  if (n % parts != 0) {
    fail(std::string(what) + " " + std::to_string(n) + " is not divisible by the tensor parallel size " +
         std::to_string(parts) + ": choose sizes that split evenly");
  }
  return n / parts;
}

torch::Tensor split_last(const torch::Tensor& t, const Group& g) {
  const auto n = divide(t.size(-1), g.size(), "last dimension");
  return t.narrow(-1, g.rank() * n, n).contiguous();
}

torch::Tensor gather_last(const torch::Tensor& t, const Group& g) {
  if (g.size() == 1) {
    return t;
  }
  return torch::cat(g.all_gather(t), -1);
}

torch::Tensor reduced(const torch::Tensor& t, const Group& g) {
  auto out = t.clone();
  if (g.size() > 1) {
    g.all_reduce(out);
  }
  return out;
}

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

struct CopyToRegion : torch::autograd::Function<CopyToRegion> {
  static torch::Tensor forward(AutogradContext*, const torch::Tensor& x) { return x.clone(); }
  static tensor_list backward(AutogradContext*, tensor_list g) { return {reduced(g[0], tp_group())}; }
};
struct ReduceFromRegion : torch::autograd::Function<ReduceFromRegion> {
  static torch::Tensor forward(AutogradContext*, const torch::Tensor& x) { return reduced(x, tp_group()); }
  static tensor_list backward(AutogradContext*, tensor_list g) { return {g[0]}; }
};
struct ScatterToRegion : torch::autograd::Function<ScatterToRegion> {
  static torch::Tensor forward(AutogradContext*, const torch::Tensor& x) { return split_last(x, tp_group()); }
  static tensor_list backward(AutogradContext*, tensor_list g) { return {gather_last(g[0], tp_group())}; }
};
struct GatherFromRegion : torch::autograd::Function<GatherFromRegion> {
  static torch::Tensor forward(AutogradContext*, const torch::Tensor& x) {
    return gather_last(x.contiguous(), tp_group()).clone();
  }
  static tensor_list backward(AutogradContext*, tensor_list g) { return {split_last(g[0], tp_group())}; }
};

/// nn::Linear's default initialisation, for a shard of a layer with `fan_in` inputs.
void init_uniform(torch::Tensor& t, std::int64_t fan_in) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(std::max<std::int64_t>(1, fan_in)));
  torch::NoGradGuard guard;
  t.uniform_(-bound, bound);
}

}  // namespace

namespace tp {

torch::Tensor copy_to_tensor_parallel_region(const torch::Tensor& input) {
  return CopyToRegion::apply(input);
}
torch::Tensor reduce_from_tensor_parallel_region(const torch::Tensor& input) {
  return ReduceFromRegion::apply(input);
}
torch::Tensor scatter_to_tensor_parallel_region(const torch::Tensor& input) {
  return ScatterToRegion::apply(input);
}
torch::Tensor gather_from_tensor_parallel_region(const torch::Tensor& input) {
  return GatherFromRegion::apply(input);
}

ColumnParallelLinearImpl::ColumnParallelLinearImpl(std::int64_t in_features, std::int64_t out_features, bool with_bias,
                                                   bool gather_output)
    : gather_output_(gather_output),
      out_per_rank_(divide(out_features, get_tensor_parallel_world_size(), "out_features")) {
  weight = register_parameter("weight", torch::empty({out_per_rank_, in_features}));
  init_uniform(weight, in_features);
  if (with_bias) {
    this->bias = register_parameter("bias", torch::empty({out_per_rank_}));
    init_uniform(this->bias, in_features);
  }
}

torch::Tensor ColumnParallelLinearImpl::forward(const torch::Tensor& input) {
  auto y = torch::nn::functional::linear(copy_to_tensor_parallel_region(input), weight, bias);
  return gather_output_ ? gather_from_tensor_parallel_region(y) : y;
}

void ColumnParallelLinearImpl::load_full(const torch::Tensor& full_weight, const torch::Tensor& full_bias) {
  torch::NoGradGuard guard;
  const auto start = get_tensor_parallel_rank() * out_per_rank_;
  weight.copy_(full_weight.narrow(0, start, out_per_rank_));
  if (bias.defined() && full_bias.defined()) {
    bias.copy_(full_bias.narrow(0, start, out_per_rank_));
  }
}

RowParallelLinearImpl::RowParallelLinearImpl(std::int64_t in_features, std::int64_t out_features, bool with_bias,
                                             bool input_is_parallel)
    : input_is_parallel_(input_is_parallel),
      in_per_rank_(divide(in_features, get_tensor_parallel_world_size(), "in_features")) {
  weight = register_parameter("weight", torch::empty({out_features, in_per_rank_}));
  init_uniform(weight, in_features);
  if (with_bias) {
    // Every TP rank adds the whole bias: it starts at zero (Megatron's choice) so that the
    // ranks agree without a broadcast, and receives the same gradient on every rank.
    this->bias = register_parameter("bias", torch::zeros({out_features}));
  }
}

torch::Tensor RowParallelLinearImpl::forward(const torch::Tensor& input) {
  auto x = input_is_parallel_ ? input : scatter_to_tensor_parallel_region(input);
  auto y = reduce_from_tensor_parallel_region(torch::nn::functional::linear(x, weight));
  return bias.defined() ? y + bias : y;
}

void RowParallelLinearImpl::load_full(const torch::Tensor& full_weight, const torch::Tensor& full_bias) {
  torch::NoGradGuard guard;
  weight.copy_(full_weight.narrow(1, get_tensor_parallel_rank() * in_per_rank_, in_per_rank_));
  if (bias.defined() && full_bias.defined()) {
    bias.copy_(full_bias);
  }
}

VocabParallelEmbeddingImpl::VocabParallelEmbeddingImpl(std::int64_t num_embeddings, std::int64_t embedding_dim) {
  const auto per_rank = divide(num_embeddings, get_tensor_parallel_world_size(), "num_embeddings");
  start_ = get_tensor_parallel_rank() * per_rank;
  end_ = start_ + per_rank;
  weight = register_parameter("weight", torch::empty({per_rank, embedding_dim}));
  torch::NoGradGuard guard;
  weight.normal_();
}

torch::Tensor VocabParallelEmbeddingImpl::forward(const torch::Tensor& ids) {
  auto outside = (ids < start_).logical_or(ids >= end_);
  auto local = (ids - start_).masked_fill(outside, 0);
  auto out = torch::nn::functional::embedding(local, weight);
  out = out.masked_fill(outside.unsqueeze(-1), 0.0);
  return reduce_from_tensor_parallel_region(out);
}

void VocabParallelEmbeddingImpl::load_full(const torch::Tensor& full_weight) {
  torch::NoGradGuard guard;
  weight.copy_(full_weight.narrow(0, start_, end_ - start_));
}

}  // namespace tp

// ------------------------------------------------------------------ data parallel

void broadcast_parameters(torch::nn::Module& module, const Group& group, int root) {
  if (group.size() <= 1) {
    return;
  }
  torch::NoGradGuard guard;
  for (auto& p : module.parameters()) {
    auto data = p.detach();
    group.broadcast(data, root);
  }
  for (auto& b : module.buffers()) {
    group.broadcast(b, root);
  }
}

struct DistributedDataParallel::State {
  struct Bucket {
    std::vector<std::size_t> params;  ///< indices into State::params
    std::vector<std::int64_t> offsets;
    torch::Tensor buffer;  ///< flat gradients (fp32 when gloo cannot reduce the params' dtype)
    std::size_t ready = 0;
    bool launched = false;
    Work work;
  };
  std::shared_ptr<torch::nn::Module> module;
  Group group;
  DataParallelOptions options;
  std::vector<torch::Tensor> params;
  std::vector<std::size_t> bucket_of;
  std::vector<Bucket> buckets;
  std::size_t next_launch = 0;
  std::mutex mutex;

  /// Launch ready buckets strictly in order, so every rank issues the same sequence.
  void launch_ready() {
    while (next_launch < buckets.size() && buckets[next_launch].ready == buckets[next_launch].params.size()) {
      auto& b = buckets[next_launch++];
      b.work = group.all_reduce_async(b.buffer);
      b.launched = true;
    }
  }
};

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<torch::nn::Module> module, Group group,
                                                 DataParallelOptions options)
    : state_(std::make_shared<State>()) {
  auto& s = *state_;
  s.module = std::move(module);
  if (!group.valid()) {
    group = tp::tensor_parallel_is_initialized() ? tp::get_data_parallel_group() : world();
  }
  s.group = group;
  s.options = options;
  broadcast_parameters(*s.module, s.group, s.group.members().front());
  for (auto& p : s.module->parameters()) {
    if (p.requires_grad()) {
      s.params.push_back(p);
    }
  }
  // Buckets in reverse registration order: backward produces the last layers' gradients first.
  const bool gloo = dist_info().backend.empty() || dist_info().backend == "gloo";
  s.bucket_of.assign(s.params.size(), 0);
  std::size_t bytes = 0;
  for (std::size_t k = s.params.size(); k-- > 0;) {
    const auto& p = s.params[k];
    const auto dtype = p.scalar_type();
    const std::size_t size = static_cast<std::size_t>(p.numel()) * p.element_size();
    const bool new_bucket = s.buckets.empty() || bytes + size > options.bucket_bytes ||
                            s.params[s.buckets.back().params.front()].scalar_type() != dtype;
    if (new_bucket) {
      s.buckets.emplace_back();
      bytes = 0;
    }
    auto& b = s.buckets.back();
    b.offsets.push_back(b.params.empty() ? 0 : b.offsets.back() + s.params[b.params.back()].numel());
    b.params.push_back(k);
    s.bucket_of[k] = s.buckets.size() - 1;
    bytes += size;
  }
  for (auto& b : s.buckets) {
    const auto& first = s.params[b.params.front()];
    auto dtype = first.scalar_type();
    if (gloo && (dtype == torch::kBFloat16 || dtype == torch::kHalf)) {
      dtype = torch::kFloat32;
    }
    b.buffer = torch::zeros({b.offsets.back() + s.params[b.params.back()].numel()},
                            torch::TensorOptions().dtype(dtype).device(first.device()));
  }
  if (!options.overlap || s.group.size() <= 1) {
    return;
  }
  std::weak_ptr<State> weak = state_;
  for (std::size_t k = 0; k < s.params.size(); ++k) {
    s.params[k].register_hook([weak, k](const torch::Tensor& grad) {
      if (auto st = weak.lock()) {
        std::lock_guard<std::mutex> lock(st->mutex);
        auto& b = st->buckets[st->bucket_of[k]];
        const auto pos = static_cast<std::size_t>(std::find(b.params.begin(), b.params.end(), k) - b.params.begin());
        b.buffer.narrow(0, b.offsets[pos], grad.numel()).copy_(grad.reshape(-1));
        ++b.ready;
        st->launch_ready();
      }
      return torch::Tensor();
    });
  }
}

DistributedDataParallel::~DistributedDataParallel() = default;

void DistributedDataParallel::synchronize() {
  auto& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  torch::NoGradGuard guard;
  const int n = s.group.size();
  // Without overlap (or for parameters whose hooks did not run) gather the gradients now.
  for (auto& b : s.buckets) {
    if (b.ready == b.params.size()) {
      continue;
    }
    for (std::size_t i = 0; i < b.params.size(); ++i) {
      const auto& p = s.params[b.params[i]];
      auto slice = b.buffer.narrow(0, b.offsets[i], p.numel());
      p.grad().defined() ? slice.copy_(p.grad().reshape(-1)) : slice.zero_();
    }
    b.ready = b.params.size();
  }
  if (n > 1) {
    s.launch_ready();
  }
  for (auto& b : s.buckets) {
    b.work.wait();
    if (n > 1) {
      b.buffer.div_(static_cast<double>(n));
    }
    for (std::size_t i = 0; i < b.params.size(); ++i) {
      auto& p = s.params[b.params[i]];
      auto avg = b.buffer.narrow(0, b.offsets[i], p.numel()).view(p.sizes()).to(p.scalar_type());
      if (p.grad().defined()) {
        p.mutable_grad().copy_(avg);
      } else {
        p.mutable_grad() = avg.clone();
      }
    }
    b.ready = 0;
    b.launched = false;
  }
  s.next_launch = 0;
}

std::size_t DistributedDataParallel::num_buckets() const {
  return state_->buckets.size();
}

const Group& DistributedDataParallel::group() const {
  return state_->group;
}

DistributedDataParallel wrap_model(std::shared_ptr<torch::nn::Module> module, const WrapOptions& options) {
  std::string strategy = options.strategy;
  std::transform(strategy.begin(), strategy.end(), strategy.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (strategy == "fsdp") {
    fail(
        "wrap_model: FSDP is not in libezpz_torch yet: use ddp (WrapOptions::strategy = \"ddp\", "
        "DistributedDataParallel), or Python ezpz's wrap_model for FSDP");
  }
  if (strategy != "ddp") {
    fail("wrap_model: strategy \"" + options.strategy + "\" is not one of ddp, fsdp: use ddp");
  }
  if (!module) {
    fail("wrap_model: the module is null: pass the model to train");
  }
  return DistributedDataParallel(std::move(module), options.group, options.data_parallel);
}

// ------------------------------------------------------------------ History

struct History::State {
  HistoryOptions options;
  core::MetricTable table;
  std::string run_dir;
  std::string jsonl;
};

History::History(HistoryOptions options) : state_(std::make_shared<State>()) {
  auto& s = *state_;
  s.options = std::move(options);
  auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char id[32];
  std::strftime(id, sizeof(id), "%Y%m%d-%H%M%S", &tm);
  s.run_dir = s.options.dir + "/" + id;
  s.jsonl = s.run_dir + "/" + id + ".jsonl";
}

std::string History::update(const Metrics& metrics) {
  auto& s = *state_;
  core::Metrics aggregated;
  if (s.options.distributed && get_world_size() > 1 && is_initialized()) {
    const auto n = static_cast<std::int64_t>(metrics.size());
    auto sums = torch::empty({2 * n}, torch::kFloat64);
    auto lo = torch::empty({n}, torch::kFloat64);
    for (std::int64_t i = 0; i < n; ++i) {
      const double v = metrics[static_cast<std::size_t>(i)].second;
      sums[i] = v;
      sums[n + i] = v * v;
      lo[i] = v;
    }
    auto hi = lo.clone();
    auto g = world();
    g.all_reduce(sums);
    g.all_reduce(lo, ReduceOp::min);
    g.all_reduce(hi, ReduceOp::max);
    std::vector<core::MetricStats> stats;
    for (std::int64_t i = 0; i < n; ++i) {
      stats.push_back(core::stats_from_sums(sums[i].item<double>(), sums[n + i].item<double>(), lo[i].item<double>(),
                                            hi[i].item<double>(), g.size()));
    }
    aggregated = core::aggregated_names(metrics, stats);
  }
  std::map<std::string, double, std::less<>> row;
  for (const auto& [k, v] : metrics) {
    row[k] = v;
    if (!s.table.has(k)) {
      s.table.keys.push_back(k);
    }
  }
  for (const auto& [k, v] : aggregated) {
    row[k] = v;
    if (!s.table.has(k)) {
      s.table.keys.push_back(k);
    }
  }
  s.table.rows.push_back(std::move(row));
  if (s.options.write && get_rank() == 0) {
    std::filesystem::create_directories(s.run_dir);
    std::ofstream out(s.jsonl, std::ios::app);
    const double ts = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    out << core::jsonl_record(ts, get_rank(), metrics, aggregated);
  }
  core::Metrics shown = metrics;
  for (const auto& [k, v] : aggregated) {
    const bool step_key = k.rfind("iter/", 0) == 0 || k.rfind("step/", 0) == 0 || k.rfind("epoch/", 0) == 0;
    if (!step_key && k.size() > 5 && k.compare(k.size() - 5, 5, "/mean") == 0) {
      shown.emplace_back(k, v);
    }
  }
  return core::format_metrics(shown);
}

std::vector<double> History::values(const std::string& key) const {
  std::vector<double> out;
  for (const auto& [x, y] : state_->table.series(key)) {
    out.push_back(y);
  }
  return out;
}

std::string History::report_markdown() const {
  return core::markdown_report(state_->table, "History report");
}

std::string History::plot(const std::string& key, int width, int height) const {
  core::PlotOptions o;
  o.width = width;
  o.height = height;
  o.title = key;
  return core::render_plot({{key, state_->table.series(key)}}, o);
}

std::string History::finalize() {
  auto& s = *state_;
  if (!s.options.write || get_rank() != 0) {
    return s.run_dir;
  }
  std::filesystem::create_directories(s.run_dir + "/plots");
  std::ofstream(s.run_dir + "/report.md") << report_markdown();
  for (const auto& key : s.table.keys) {
    std::string file = key;
    std::replace(file.begin(), file.end(), '/', '_');
    std::ofstream(s.run_dir + "/plots/" + file + ".txt") << plot(key);
  }
  return s.run_dir;
}

const std::string& History::jsonl_path() const {
  return state_->jsonl;
}

}  // namespace ezpz
