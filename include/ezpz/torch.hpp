// libezpz_torch: ezpz's training-time API for C++ programs on libtorch, mirroring the Python
// `ezpz.setup_torch`, `ezpz.tp` and `ezpz.History`:
//
//   auto info = ezpz::setup({.seed = 42});          // ranks from the launcher, rendezvous, groups
//   ezpz::tp::initialize_tensor_parallel(2);        // optional: (dp, pp, cp, tp) groups, TP fastest
//   ezpz::DistributedDataParallel ddp(model);       // broadcast from rank 0, bucketed grad all-reduce
//   ... loss.backward(); ddp.synchronize(); opt.step();
//   ezpz::cleanup();
//
// Errors are exceptions (std::runtime_error) with one line naming the problem and the fix.
// The library is built with hidden visibility: what is marked EZPZ_API is its whole ABI.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

/// The library's exported names (it is built with -fvisibility=hidden).
#ifndef EZPZ_API
#define EZPZ_API __attribute__((visibility("default")))
#endif

namespace ezpz {

// ------------------------------------------------------------------ setup

struct SetupOptions {
  /// "" = TORCH_DEVICE, else xpu, cuda, mps, cpu (what this libtorch has); "cuda:1" names the index.
  std::string device;
  /// "" = TORCH_BACKEND, else the backend of the device type chosen above: nccl for cuda, xccl for
  /// xpu, gloo otherwise (so device "cpu" on a CUDA node gets gloo).
  std::string backend;
  std::optional<std::uint64_t> seed;  ///< seeds seed * (rank + 1) * (local_rank + 1) when set
  int tensor_parallel_size = 1;       ///< > 1 (or pp/cp > 1): initialize_tensor_parallel
  int pipeline_parallel_size = 1;
  int context_parallel_size = 1;
  /// Collective timeout; 0 = TORCH_DDP_TIMEOUT seconds, else 3600 s.
  std::chrono::milliseconds timeout{0};
  /// How long rank 0 waits for every rank to join; 0 = EZPZ_RENDEZVOUS_TIMEOUT seconds, else 600 s.
  std::chrono::milliseconds rendezvous_timeout{0};
};

struct DistInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int node_index = 0;
  int num_nodes = 1;
  std::string hostname;
  std::string device_type;  ///< "cpu", "cuda", "xpu", "mps"
  torch::Device device{torch::kCPU};
  std::string backend;  ///< "gloo", "nccl", ... ("" without a process group: WORLD_SIZE=1)
  std::string master;   ///< MASTER_ADDR:MASTER_PORT used for the rendezvous
};

/// Find this process's rank from the launcher's variables (the same rules as `ezpz launch`),
/// rendezvous with every rank through a TCPStore at MASTER_ADDR:MASTER_PORT and create the
/// world process group. WORLD_SIZE=1 returns at once without a process group. Calling it
/// again without cleanup() is an error.
EZPZ_API DistInfo setup(const SetupOptions& options = {});
/// Destroy the parallel groups and the process group (a no-op when not set up).
EZPZ_API void cleanup();
[[nodiscard]] EZPZ_API bool is_initialized();
[[nodiscard]] EZPZ_API const DistInfo& dist_info();
[[nodiscard]] EZPZ_API int get_rank();
[[nodiscard]] EZPZ_API int get_world_size();
[[nodiscard]] EZPZ_API int get_local_rank();
[[nodiscard]] EZPZ_API int get_node_index();
/// Device type by ezpz's rule: TORCH_DEVICE, else xpu, cuda, mps, cpu. (What setup() chose,
/// SetupOptions::device included, is dist_info().device_type.)
[[nodiscard]] EZPZ_API std::string get_torch_device_type();
/// That device, indexed by the local rank for accelerators (cuda: modulo the visible devices).
[[nodiscard]] EZPZ_API torch::Device get_torch_device();
/// TORCH_BACKEND, else the backend of get_torch_device_type(): nccl (cuda), xccl (xpu), gloo.
[[nodiscard]] EZPZ_API std::string get_torch_backend();
/// ezpz's per-rank seed: seed * (rank + 1) * (local_rank + 1).
[[nodiscard]] EZPZ_API std::uint64_t rank_seed(std::uint64_t seed, int rank, int local_rank);
/// Seed libtorch's generators (CPU and accelerators) and std::rand with `seed` as given.
EZPZ_API void seed_everything(std::uint64_t seed);

// ------------------------------------------------------------------ Python ezpz's names

/// ezpz.setup_torch: setup() under its Python name.
EZPZ_API DistInfo setup_torch(const SetupOptions& options = {});
/// ezpz.get_dist_info: dist_info() under its Python name (defaults before setup()).
[[nodiscard]] EZPZ_API const DistInfo& get_dist_info();
/// The number of nodes of the job (1 before setup()).
[[nodiscard]] EZPZ_API int get_num_nodes();
/// The accelerators this process sees on its node (the hardware, not SetupOptions::device or
/// TORCH_DEVICE), checked in ezpz's order: xpu: the XPU runtime's device count (0 when this
/// libtorch has none); cuda: torch::cuda::device_count() (CUDA_VISIBLE_DEVICES applies); mps: 1;
/// a CPU-only node: 0.
[[nodiscard]] EZPZ_API int get_gpus_per_node();
/// The machine name ezpz's detection gives ("aurora", "polaris", "perlmutter", ... or "local"):
/// EZPZ_MACHINE, else the hostname rules of ezpz's built-in machine profiles (with the site
/// variables they read, e.g. PBS_JOBID). Machines added in a user's ezpz config file are not
/// seen here; `ezpz doctor` shows the full detection.
[[nodiscard]] EZPZ_API std::string get_machine();
/// Wait until the work queued on `device` (default: setup()'s device, else get_torch_device())
/// is done: cuda: torch::cuda::synchronize(index); cpu: returns at once; xpu, mps and others:
/// the device's streams on libtorch >= 2.5, its current stream before.
EZPZ_API void synchronize(const std::optional<torch::Device>& device = std::nullopt);

// ------------------------------------------------------------------ groups and collectives

enum class ReduceOp { sum, avg, min, max, product };

namespace detail {
struct GroupImpl;
}

/// A pending collective.
class EZPZ_API Work {
 public:
  Work() = default;
  explicit Work(std::shared_ptr<void> impl) : impl_(std::move(impl)) {}
  void wait();

 private:
  std::shared_ptr<void> impl_;
};

/// A process group this rank belongs to (or an empty one: size 0, it does not belong).
/// Collectives on a one-rank group return at once.
class EZPZ_API Group {
 public:
  Group() = default;
  explicit Group(std::shared_ptr<detail::GroupImpl> impl) : impl_(std::move(impl)) {}
  [[nodiscard]] bool valid() const { return impl_ != nullptr; }
  [[nodiscard]] int rank() const;  ///< this process's rank in the group
  [[nodiscard]] int size() const;
  [[nodiscard]] const std::vector<int>& members() const;  ///< global ranks, ascending
  [[nodiscard]] const std::string& name() const;

  void all_reduce(torch::Tensor& tensor, ReduceOp op = ReduceOp::sum) const;
  /// Start an all-reduce (sum) and return at once; wait() before reading `tensor`.
  [[nodiscard]] Work all_reduce_async(torch::Tensor& tensor) const;
  /// `root` is a global rank.
  void broadcast(torch::Tensor& tensor, int root) const;
  /// Every member's tensor (same shape on every rank), in member order.
  [[nodiscard]] std::vector<torch::Tensor> all_gather(const torch::Tensor& tensor) const;
  void barrier() const;

 private:
  std::shared_ptr<detail::GroupImpl> impl_;
};

/// All ranks (a one-rank group before setup or with WORLD_SIZE=1).
[[nodiscard]] EZPZ_API Group world();
EZPZ_API void barrier();
EZPZ_API void broadcast(torch::Tensor& tensor, int root = 0);
EZPZ_API void all_reduce(torch::Tensor& tensor, ReduceOp op = ReduceOp::sum);
/// A group of `ranks` (global, any order). Like torch.distributed.new_group, every rank calls
/// it with the same lists in the same order; ranks outside the list get an empty Group.
[[nodiscard]] EZPZ_API Group new_group(std::vector<int> ranks);

// ------------------------------------------------------------------ tensor parallel

namespace tp {

/// Reshape the world to (dp, pp, cp, tp), TP fastest, and create this rank's four groups.
/// tp is clamped to the world size; sizes that do not divide are an error naming them;
/// a second call without destroy_tensor_parallel() is an error.
EZPZ_API void initialize_tensor_parallel(int tensor_parallel_size, int pipeline_parallel_size = 1,
                                         int context_parallel_size = 1);
EZPZ_API void destroy_tensor_parallel();
[[nodiscard]] EZPZ_API bool tensor_parallel_is_initialized();

/// Groups (an error before initialize_tensor_parallel).
[[nodiscard]] EZPZ_API Group get_tensor_parallel_group();
[[nodiscard]] EZPZ_API Group get_data_parallel_group();
[[nodiscard]] EZPZ_API Group get_pipeline_parallel_group();
[[nodiscard]] EZPZ_API Group get_context_parallel_group();
/// Ranks and sizes (0 and 1 before initialization, like ezpz).
[[nodiscard]] EZPZ_API int get_tensor_parallel_rank();
[[nodiscard]] EZPZ_API int get_tensor_parallel_world_size();
[[nodiscard]] EZPZ_API int get_data_parallel_rank();
[[nodiscard]] EZPZ_API int get_data_parallel_world_size();
[[nodiscard]] EZPZ_API int get_pipeline_parallel_rank();
[[nodiscard]] EZPZ_API int get_pipeline_parallel_world_size();
[[nodiscard]] EZPZ_API int get_context_parallel_rank();
[[nodiscard]] EZPZ_API int get_context_parallel_world_size();
/// The global rank of TP rank 0 in this rank's TP group: (rank / tp) * tp.
[[nodiscard]] EZPZ_API int get_tensor_parallel_src_rank();

/// The four region mappings over the TP group (autograd functions):
/// copy: forward identity, backward all-reduce; reduce: forward all-reduce, backward identity;
/// scatter: forward keep this rank's slice of the last dim, backward all-gather;
/// gather: forward all-gather along the last dim, backward keep the slice.
[[nodiscard]] EZPZ_API torch::Tensor copy_to_tensor_parallel_region(const torch::Tensor& input);
[[nodiscard]] EZPZ_API torch::Tensor reduce_from_tensor_parallel_region(const torch::Tensor& input);
[[nodiscard]] EZPZ_API torch::Tensor scatter_to_tensor_parallel_region(const torch::Tensor& input);
[[nodiscard]] EZPZ_API torch::Tensor gather_from_tensor_parallel_region(const torch::Tensor& input);

/// Y = X A^T + b with A split by output rows across the TP group (this rank: out/tp rows).
class EZPZ_API ColumnParallelLinearImpl : public torch::nn::Module {
 public:
  ColumnParallelLinearImpl(std::int64_t in_features, std::int64_t out_features, bool with_bias = true,
                           bool gather_output = true);
  torch::Tensor forward(const torch::Tensor& input);
  /// Take this rank's shard of a full [out, in] weight and [out] bias.
  void load_full(const torch::Tensor& weight, const torch::Tensor& bias = {});
  torch::Tensor weight, bias;

 private:
  bool gather_output_;
  std::int64_t out_per_rank_;
};
TORCH_MODULE(ColumnParallelLinear);

/// Y = X A^T + b with A split by input columns across the TP group; the bias is not split
/// (it starts at zero on every rank).
class EZPZ_API RowParallelLinearImpl : public torch::nn::Module {
 public:
  RowParallelLinearImpl(std::int64_t in_features, std::int64_t out_features, bool with_bias = true,
                        bool input_is_parallel = false);
  torch::Tensor forward(const torch::Tensor& input);
  void load_full(const torch::Tensor& weight, const torch::Tensor& bias = {});
  torch::Tensor weight, bias;

 private:
  bool input_is_parallel_;
  std::int64_t in_per_rank_;
};
TORCH_MODULE(RowParallelLinear);

/// An embedding table split along the vocabulary across the TP group.
class EZPZ_API VocabParallelEmbeddingImpl : public torch::nn::Module {
 public:
  VocabParallelEmbeddingImpl(std::int64_t num_embeddings, std::int64_t embedding_dim);
  torch::Tensor forward(const torch::Tensor& ids);
  void load_full(const torch::Tensor& weight);
  torch::Tensor weight;

 private:
  std::int64_t start_, end_;
};
TORCH_MODULE(VocabParallelEmbedding);

}  // namespace tp

// ------------------------------------------------------------------ data parallel

struct DataParallelOptions {
  std::size_t bucket_bytes = 25u << 20;  ///< gradients per all-reduce
  /// Start each bucket's all-reduce from gradient hooks, during backward.
  bool overlap = true;
};

/// Data parallel training over `group` (default: the data-parallel group when TP is
/// initialized, else the world): parameters broadcast from the group's first rank at
/// construction; after each backward, synchronize() leaves every gradient averaged over the
/// group. One backward per synchronize(); every rank must produce gradients for the same
/// parameters.
class EZPZ_API DistributedDataParallel {
 public:
  explicit DistributedDataParallel(std::shared_ptr<torch::nn::Module> module, Group group = {},
                                   DataParallelOptions options = {});
  template <class M>
  explicit DistributedDataParallel(torch::nn::ModuleHolder<M> module, Group group = {},
                                   DataParallelOptions options = {})
      : DistributedDataParallel(module.ptr(), std::move(group), options) {}
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  /// Wait for the buckets' all-reduces and write the averaged gradients.
  void synchronize();
  [[nodiscard]] std::size_t num_buckets() const;
  [[nodiscard]] const Group& group() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

/// Broadcast every parameter and buffer of `module` from `root` (a global rank) over `group`.
EZPZ_API void broadcast_parameters(torch::nn::Module& module, const Group& group, int root);

struct WrapOptions {
  /// "ddp": DistributedDataParallel. "fsdp" is not in libezpz_torch yet: wrap_model throws.
  std::string strategy = "ddp";
  Group group;  ///< as DistributedDataParallel's (default: the data-parallel group, else the world)
  DataParallelOptions data_parallel;
};

/// ezpz.wrap_model: wrap `module` for data parallel training by `options.strategy`. Throws
/// std::runtime_error for "fsdp" (not implemented here) and for an unknown strategy.
[[nodiscard]] EZPZ_API DistributedDataParallel wrap_model(std::shared_ptr<torch::nn::Module> module,
                                                          const WrapOptions& options = {});
template <class M>
[[nodiscard]] DistributedDataParallel wrap_model(torch::nn::ModuleHolder<M> module, const WrapOptions& options = {}) {
  return wrap_model(module.ptr(), options);
}

// ------------------------------------------------------------------ metrics

struct HistoryOptions {
  std::string dir = "outputs/history";  ///< run files go to DIR/<run id>/ (rank 0 writes)
  bool distributed = true;              ///< cross-rank mean/min/max/std of each metric
  bool write = true;                    ///< write the JSONL file and report at all
};

/// Per-step metrics (ezpz's History): update() records a step, adds the cross-rank
/// statistics {key/mean, key/max, key/min, key/std} and appends a JSONL record in Python
/// ezpz's layout; finalize() writes report.md and a text plot of each metric.
class EZPZ_API History {
 public:
  using Metrics = std::vector<std::pair<std::string, double>>;
  explicit History(HistoryOptions options = {});
  /// Every rank calls it with the same keys; returns "iter=1 loss=... loss/mean=...".
  std::string update(const Metrics& metrics);
  /// Values of `key` recorded on this rank.
  [[nodiscard]] std::vector<double> values(const std::string& key) const;
  [[nodiscard]] std::string report_markdown() const;
  [[nodiscard]] std::string plot(const std::string& key, int width = 72, int height = 14) const;
  /// Write report.md and plots/<key>.txt (rank 0); returns the run directory.
  std::string finalize();
  [[nodiscard]] const std::string& jsonl_path() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace ezpz
