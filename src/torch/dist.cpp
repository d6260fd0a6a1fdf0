// setup/cleanup, the rendezvous, process groups and collectives on c10d (the only file that
// includes c10d's headers), and the tensor-parallel groups.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <thread>

#include <ezpz/torch.hpp>
#include <netdb.h>
#include <sys/socket.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>
#include <unistd.h>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "core/base/strings.hpp"
#include "core/launch/rank_env.hpp"
#include "torch/state.hpp"

namespace ezpz {
using detail::fail;
using detail::make_group;

namespace {

#if TORCH_VERSION_MAJOR >= 2
using Backend = c10d::Backend;  // torch 2 splits the collectives' implementation from ProcessGroup
#else
using Backend = c10d::ProcessGroup;
#endif

std::chrono::milliseconds seconds_from(const core::Env& env, const char* name, std::chrono::milliseconds given,
                                       double fallback_s) {
  if (given.count() > 0) {
    return given;
  }
  double s = fallback_s;
  if (auto v = env.get(name)) {
    char* end = nullptr;
    const double parsed = std::strtod(v->c_str(), &end);
    if (end == v->c_str() || *end != '\0' || parsed <= 0) {
      fail(std::string(name) + "=" + *v + " is not a positive number of seconds");
    }
    s = parsed;
  }
  return std::chrono::milliseconds(static_cast<long long>(s * 1000));
}

std::string list_ranks(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size() && i < 16; ++i) {
    out += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  }
  return ranks.size() > 16 ? out + ", ..." : out;
}

}  // namespace

namespace detail {
void fail(const std::string& message) {
  throw std::runtime_error("ezpz: " + message);
}

State& state() {
  static State s;
  return s;
}

struct GroupImpl {
  std::string name;
  std::vector<int> members;
  int rank = 0;
  c10::intrusive_ptr<Backend> pg;  ///< null for a one-rank group
};
}  // namespace detail

namespace {

using detail::State;
using detail::state;

Group single_rank_group(const std::string& name, int global_rank) {
  auto impl = std::make_shared<detail::GroupImpl>();
  impl->name = name;
  impl->members = {global_rank};
  return Group(impl);
}

std::shared_ptr<::gloo::transport::Device> gloo_device(const core::Env& env) {
  static std::shared_ptr<::gloo::transport::Device> device;
  if (!device) {
    if (auto ifname = env.get("GLOO_SOCKET_IFNAME")) {
      device = c10d::ProcessGroupGloo::createDeviceForInterface(*ifname);
    } else {
      device = c10d::ProcessGroupGloo::createDefaultDevice();
    }
  }
  return device;
}

}  // namespace

/// A process group of `members` over its own key space `name` in the rendezvous store.
Group detail::make_group(const std::string& name, std::vector<int> members) {
  auto& s = state();
  const int me = s.info.rank;
  auto it = std::find(members.begin(), members.end(), me);
  if (it == members.end()) {
    return {};
  }
  auto impl = std::make_shared<detail::GroupImpl>();
  impl->name = name;
  impl->rank = static_cast<int>(it - members.begin());
  impl->members = std::move(members);
  const int size = static_cast<int>(impl->members.size());
  if (size > 1) {
    auto store = c10::make_intrusive<c10d::PrefixStore>(s.prefix + name, s.store);
    const auto& backend = s.info.backend;
    if (backend == "gloo") {
      auto options = c10d::ProcessGroupGloo::Options::create(s.timeout);
      options->devices.push_back(gloo_device(s.env));
      impl->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, impl->rank, size, options);
#ifdef USE_C10D_NCCL
    } else if (backend == "nccl") {
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = s.timeout;
      impl->pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, impl->rank, size, options);
#endif
    } else {
      fail("backend " + backend + " is not available in this libezpz_torch (it has gloo" +
#ifdef USE_C10D_NCCL
           std::string(" and nccl") +
#else
           std::string() +
#endif
           "): set TORCH_BACKEND to one of those");
    }
  }
  return Group(impl);
}

namespace {

c10d::ReduceOp to_c10d(ReduceOp op) {
  switch (op) {
    case ReduceOp::min:
      return c10d::ReduceOp::MIN;
    case ReduceOp::max:
      return c10d::ReduceOp::MAX;
    case ReduceOp::product:
      return c10d::ReduceOp::PRODUCT;
    case ReduceOp::sum:
    case ReduceOp::avg:
      break;
  }
  return c10d::ReduceOp::SUM;
}

const detail::GroupImpl& impl_of(const std::shared_ptr<detail::GroupImpl>& impl) {
  if (!impl) {
    fail("collective on an empty group (this rank is not a member): call it only on ranks of the group");
  }
  return *impl;
}

/// Wait (polling every 5 ms) until something accepts connections at addr:port. libtorch's
/// TCPStore client sleeps a whole second after a refused connection, which is most of setup()
/// when the other ranks start before rank 0 listens.
void wait_for_listener(const std::string& addr, int port, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(addr.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || found == nullptr) {
    return;  // let TCPStore report the name it cannot resolve
  }
  while (std::chrono::steady_clock::now() < deadline) {
    bool up = false;
    for (auto* ai = found; ai != nullptr && !up; ai = ai->ai_next) {
      const int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
      if (fd >= 0) {
        up = connect(fd, ai->ai_addr, ai->ai_addrlen) == 0;
        close(fd);
      }
    }
    if (up) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  freeaddrinfo(found);
}

void rendezvous(State& s, const core::RankInfo& rank, std::chrono::milliseconds rendezvous_timeout) {
  const auto addr = s.env.get("MASTER_ADDR");
  const auto port_text = s.env.get("MASTER_PORT");
  if (!addr || !port_text) {
    fail("WORLD_SIZE is " + std::to_string(rank.world) +
         " but MASTER_ADDR and MASTER_PORT are not both set: launch with `ezpz launch` (it sets them) or export "
         "them on every rank");
  }
  const auto port = core::parse_positive_int(*port_text);
  if (!port || *port > 65535) {
    fail("MASTER_PORT=" + *port_text + " is not a TCP port (1-65535)");
  }
  s.info.master = *addr + ":" + *port_text;
  const double wait_s = static_cast<double>(rendezvous_timeout.count()) / 1000.0;
  char wait_text[32];
  std::snprintf(wait_text, sizeof(wait_text), "%g s", wait_s);
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(*port);
  options.isServer = rank.rank == 0;
  options.waitWorkers = false;
  options.timeout = rendezvous_timeout;
  try {
    if (rank.rank != 0) {
      wait_for_listener(*addr, *port, rendezvous_timeout);
    }
    s.store = c10::make_intrusive<c10d::TCPStore>(*addr, options);
  } catch (const std::exception& e) {
    std::string why = e.what();
    why = why.substr(0, why.find('\n'));
    if (rank.rank == 0) {
      fail("rank 0 could not serve the rendezvous on port " + *port_text + " (" + why + "): choose a free MASTER_PORT");
    }
    fail("rank " + std::to_string(rank.rank) + " could not reach the rendezvous at " + s.info.master + " within " +
         wait_text + " (" + why + "): is rank 0 running, and do all ranks see the same MASTER_ADDR/MASTER_PORT?");
  }
  s.prefix = "ezpz/" + std::to_string(s.generation) + "/";
  s.store->set(s.prefix + "host/" + std::to_string(rank.rank),
               std::vector<std::uint8_t>(s.env.hostname.begin(), s.env.hostname.end()));
  if (s.store->add(s.prefix + "joined", 1) == rank.world) {
    s.store->set(s.prefix + "all", std::vector<std::uint8_t>{1});
  }
  try {
    s.store->wait({s.prefix + "all"}, rendezvous_timeout);
  } catch (const std::exception&) {
    std::vector<int> missing;
    for (int r = 0; r < rank.world; ++r) {
      if (!s.store->check({s.prefix + "host/" + std::to_string(r)})) {
        missing.push_back(r);
      }
    }
    s.store.reset();
    fail("rendezvous at " + s.info.master + " timed out after " + wait_text + ": " + std::to_string(missing.size()) +
         " of " + std::to_string(rank.world) + " ranks never joined (missing rank" +
         (missing.size() == 1 ? " " : "s ") + list_ranks(missing) +
         "); check that every rank started and sees the same MASTER_ADDR/MASTER_PORT (EZPZ_RENDEZVOUS_TIMEOUT "
         "sets the wait)");
  }
}

/// Local rank, local world and node index from the hosts the ranks reported (for launchers
/// that set no LOCAL_RANK-like variable); ranks are placed in blocks by host.
core::RankContext context_from_hosts(State& s, int world) {
  std::vector<std::string> hosts;
  for (int r = 0; r < world; ++r) {
    auto bytes = s.store->get(s.prefix + "host/" + std::to_string(r));
    hosts.emplace_back(bytes.begin(), bytes.end());
  }
  core::RankContext ctx;
  ctx.nprocs = world;
  ctx.ppn = static_cast<int>(std::count(hosts.begin(), hosts.end(), s.env.hostname));
  std::vector<std::string> unique;
  for (const auto& h : hosts) {
    if (std::find(unique.begin(), unique.end(), h) == unique.end()) {
      unique.push_back(h);
    }
  }
  ctx.nhosts = static_cast<int>(unique.size());
  return ctx;
}

}  // namespace

// ------------------------------------------------------------------ setup

DistInfo setup(const SetupOptions& options) {
  auto& s = state();
  if (s.initialized) {
    fail("setup() was already called in this process: call ezpz::cleanup() before setting up again");
  }
  s.env = detail::snapshot_env();
  // The device type first (the option, TORCH_DEVICE, what the node has), then the backend for
  // that type: device "cpu" on a CUDA node gets gloo. A bad device name fails before the rendezvous.
  const auto facts = detail::device_facts();
  const auto choice = detail::choose_device(options.device, options.backend, s.env, facts);
  (void)detail::make_device(choice, 0, facts);
  core::RankContext ctx;
  auto rank = core::detect_rank(s.env, ctx);
  if (!rank) {
    fail(rank.error().message);
  }
  s.timeout = seconds_from(s.env, "TORCH_DDP_TIMEOUT", options.timeout, 3600);
  s.info = DistInfo{};
  s.info.rank = rank->rank;
  s.info.world_size = rank->world;
  s.info.hostname = s.env.hostname;
  s.groups_made = 0;
  if (rank->world > 1) {
    s.info.backend = choice.backend;
    rendezvous(s, *rank, seconds_from(s.env, "EZPZ_RENDEZVOUS_TIMEOUT", options.rendezvous_timeout, 600));
    // Whether the launcher told us the local layout: the fallback (rank % ppn) moves with ppn.
    core::RankContext one;
    core::RankContext two;
    two.ppn = 2;
    const auto a = core::detect_rank(s.env, one);
    const auto b = core::detect_rank(s.env, two);
    if (a->local_world != b->local_world || a->local_rank != b->local_rank) {
      rank = core::detect_rank(s.env, context_from_hosts(s, rank->world));
    }
  }
  s.info.local_rank = rank->local_rank;
  s.info.local_world_size = rank->local_world;
  s.info.node_index = rank->node_rank;
  s.info.num_nodes = std::max(1, rank->world / std::max(1, rank->local_world));
  s.initialized = true;
  s.info.device_type = choice.device_type;
  s.info.device = detail::make_device(choice, s.info.local_rank, facts);
  try {
    if (rank->world > 1) {
      std::vector<int> all(static_cast<std::size_t>(rank->world));
      for (int r = 0; r < rank->world; ++r) {
        all[static_cast<std::size_t>(r)] = r;
      }
      s.world = make_group("world", all);
    } else {
      s.world = single_rank_group("world", 0);
    }
    if (options.seed) {
      seed_everything(rank_seed(*options.seed, s.info.rank, s.info.local_rank));
    }
    if (options.tensor_parallel_size > 1 || options.pipeline_parallel_size > 1 || options.context_parallel_size > 1) {
      tp::initialize_tensor_parallel(options.tensor_parallel_size, options.pipeline_parallel_size,
                                     options.context_parallel_size);
    }
  } catch (...) {
    cleanup();
    throw;
  }
  return s.info;
}

void cleanup() {
  auto& s = state();
  if (!s.initialized) {
    return;
  }
  tp::destroy_tensor_parallel();
  s.world = {};
  if (s.store) {
    // Rank 0 serves the store: keep it up until every rank has finished with it.
    try {
      s.store->add(s.prefix + "done", 1);
      if (s.info.rank == 0) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (s.store->add(s.prefix + "done", 0) < s.info.world_size && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
      }
    } catch (const std::exception&) {
      // a peer or the server is gone: nothing left to wait for
    }
    s.store.reset();
  }
  s.initialized = false;
  ++s.generation;
}

bool is_initialized() {
  return state().initialized;
}

const DistInfo& dist_info() {
  return state().info;
}

int get_rank() {
  return state().info.rank;
}
int get_world_size() {
  return state().info.world_size;
}
int get_local_rank() {
  return state().info.local_rank;
}
int get_node_index() {
  return state().info.node_index;
}

// ------------------------------------------------------------------ groups and collectives

void Work::wait() {
  if (impl_) {
    (*std::static_pointer_cast<std::function<void()>>(impl_))();
    impl_.reset();
  }
}

int Group::rank() const {
  return impl_ ? impl_->rank : 0;
}
int Group::size() const {
  return impl_ ? static_cast<int>(impl_->members.size()) : 0;
}
const std::vector<int>& Group::members() const {
  static const std::vector<int> none;
  return impl_ ? impl_->members : none;
}
const std::string& Group::name() const {
  static const std::string none;
  return impl_ ? impl_->name : none;
}

void Group::all_reduce(torch::Tensor& tensor, ReduceOp op) const {
  const auto& g = impl_of(impl_);
  if (g.pg) {
    std::vector<at::Tensor> tensors = {tensor};
    c10d::AllreduceOptions opts;
    opts.reduceOp = to_c10d(op);
    opts.timeout = state().timeout;
    g.pg->allreduce(tensors, opts)->wait();
  }
  if (op == ReduceOp::avg && g.members.size() > 1) {
    tensor.div_(static_cast<double>(g.members.size()));
  }
}

Work Group::all_reduce_async(torch::Tensor& tensor) const {
  const auto& g = impl_of(impl_);
  if (!g.pg) {
    return {};
  }
  std::vector<at::Tensor> tensors = {tensor};
  auto work = g.pg->allreduce(tensors);
  return Work(std::make_shared<std::function<void()>>([work] { work->wait(); }));
}

void Group::broadcast(torch::Tensor& tensor, int root) const {
  const auto& g = impl_of(impl_);
  auto it = std::find(g.members.begin(), g.members.end(), root);
  if (it == g.members.end()) {
    fail("broadcast root " + std::to_string(root) + " is not in group " + g.name + " (" + list_ranks(g.members) +
         "): give a member's global rank");
  }
  if (g.pg) {
    std::vector<at::Tensor> tensors = {tensor};
    c10d::BroadcastOptions opts;
    opts.rootRank = static_cast<int>(it - g.members.begin());
    opts.timeout = state().timeout;
    g.pg->broadcast(tensors, opts)->wait();
  }
}

std::vector<torch::Tensor> Group::all_gather(const torch::Tensor& tensor) const {
  const auto& g = impl_of(impl_);
  auto input = tensor.contiguous();
  if (!g.pg) {
    return {input.clone()};
  }
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (std::size_t i = 0; i < g.members.size(); ++i) {
    outputs[0].push_back(torch::empty_like(input));
  }
  std::vector<at::Tensor> inputs = {input};
  g.pg->allgather(outputs, inputs)->wait();
  return outputs[0];
}

void Group::barrier() const {
  const auto& g = impl_of(impl_);
  if (g.pg) {
    c10d::BarrierOptions opts;
    opts.timeout = state().timeout;
    g.pg->barrier(opts)->wait();
  }
}

Group world() {
  auto& s = state();
  return s.initialized ? s.world : single_rank_group("world", 0);
}
void barrier() {
  world().barrier();
}
void broadcast(torch::Tensor& tensor, int root) {
  world().broadcast(tensor, root);
}
void all_reduce(torch::Tensor& tensor, ReduceOp op) {
  world().all_reduce(tensor, op);
}

Group new_group(std::vector<int> ranks) {
  auto& s = state();
  if (!s.initialized) {
    fail("new_group() before setup(): call ezpz::setup() first");
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  for (int r : ranks) {
    if (r < 0 || r >= s.info.world_size) {
      fail("new_group: rank " + std::to_string(r) + " is outside the world (size " + std::to_string(s.info.world_size) +
           ")");
    }
  }
  return make_group("group/" + std::to_string(s.groups_made++), std::move(ranks));
}

}  // namespace ezpz
