// The device, backend and machine a rank runs on (the decisions are core/train/torch_choice's, from
// what libtorch reports here), seeding, device synchronization, and Python ezpz's names for
// setup's results (setup_torch, get_dist_info, get_num_nodes, get_gpus_per_node, get_machine).
#include <cstdlib>
#include <cstring>

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <ezpz/torch.hpp>
#include <torch/version.h>
#include <unistd.h>

#include "torch/state.hpp"

extern char** environ;

namespace ezpz {
using detail::fail;
using detail::state;

namespace {

/// TORCH_DEVICE and TORCH_BACKEND as the process has them now (for the getters that work
/// without setup()).
core::Env torch_env() {
  core::Env env;
  for (const char* name : {"TORCH_DEVICE", "TORCH_BACKEND"}) {
    if (const char* v = std::getenv(name); v != nullptr) {
      env.vars.emplace(name, v);
    }
  }
  return env;
}

core::TorchChoice current_choice() {
  return detail::choose_device({}, {}, torch_env(), detail::device_facts());
}

/// libtorch's runtime for `type` ("xpu", "mps", ...), or null when this libtorch has none.
const c10::impl::DeviceGuardImplInterface* runtime_of(const std::string& type) {
  try {
    const auto t = c10::Device(type).type();
    return c10::impl::hasDeviceGuardImpl(t) ? c10::impl::getDeviceGuardImpl(t) : nullptr;
  } catch (const c10::Error&) {
    return nullptr;  // a type this libtorch does not know
  }
}

}  // namespace

// ------------------------------------------------------------------ what this node has

core::Env detail::snapshot_env() {
  core::Env env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr) {
      env.vars.emplace(std::string(*e, static_cast<std::size_t>(eq - *e)), std::string(eq + 1));
    }
  }
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) {
    env.hostname = host;
  }
  env.pid = static_cast<int>(getpid());
  return env;
}

core::DeviceFacts detail::device_facts() {
  core::DeviceFacts facts;
#if TORCH_VERSION_MAJOR >= 2
  facts.has_xpu = at::hasXPU();
#endif
  facts.cuda_device_count = torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  facts.has_mps = at::hasMPS();
  return facts;
}

core::TorchChoice detail::choose_device(std::string_view device, std::string_view backend, const core::Env& env,
                                        const core::DeviceFacts& facts) {
  const auto env_device = env.get("TORCH_DEVICE").value_or("");
  const auto env_backend = env.get("TORCH_BACKEND").value_or("");
  core::TorchWants wants;
  wants.device = device;
  wants.backend = backend;
  wants.env_device = env_device;
  wants.env_backend = env_backend;
  return core::choose_torch(wants, facts);
}

torch::Device detail::make_device(const core::TorchChoice& choice, int local_rank, const core::DeviceFacts& facts) {
  const auto name = core::device_string(choice, local_rank, facts);
  try {
    return torch::Device(name);
  } catch (const c10::Error&) {
    fail("device \"" + choice.device_type +
         "\" (from SetupOptions::device or TORCH_DEVICE) is not a device type "
         "libtorch knows: use cpu, cuda, xpu or mps");
  }
}

// ------------------------------------------------------------------ device, backend, seed

std::string get_torch_device_type() {
  return current_choice().device_type;
}

torch::Device get_torch_device() {
  return detail::make_device(current_choice(), get_local_rank(), detail::device_facts());
}

std::string get_torch_backend() {
  return current_choice().backend;
}

std::uint64_t rank_seed(std::uint64_t seed, int rank, int local_rank) {
  return seed * static_cast<std::uint64_t>(rank + 1) * static_cast<std::uint64_t>(local_rank + 1);
}

void seed_everything(std::uint64_t seed) {
  torch::manual_seed(seed);
  std::srand(static_cast<unsigned>(seed));
}

void synchronize(const std::optional<torch::Device>& device) {
  const torch::Device d = device ? *device : state().initialized ? state().info.device : get_torch_device();
  if (d.is_cpu()) {
    return;
  }
  if (d.is_cuda()) {
    torch::cuda::synchronize(d.has_index() ? d.index() : -1);
    return;
  }
  const auto* runtime = runtime_of(c10::DeviceTypeName(d.type(), true));
  if (runtime == nullptr) {
    fail("synchronize: this libtorch has no runtime for device " + d.str());
  }
  const auto index = d.has_index() ? d.index() : runtime->getDevice().index();
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
  runtime->synchronizeDevice(index);
#else
  runtime->synchronizeStream(runtime->getStream(c10::Device(d.type(), index)));
#endif
}

// ------------------------------------------------------------------ Python ezpz's names

DistInfo setup_torch(const SetupOptions& options) {
  return setup(options);
}

const DistInfo& get_dist_info() {
  return dist_info();
}

int get_num_nodes() {
  return state().info.num_nodes;
}

int get_gpus_per_node() {
  const auto facts = detail::device_facts();
  if (facts.has_xpu) {
    const auto* runtime = runtime_of("xpu");
    return runtime != nullptr ? static_cast<int>(runtime->deviceCount()) : 0;
  }
  if (facts.cuda_device_count > 0) {
    return facts.cuda_device_count;
  }
  return facts.has_mps ? 1 : 0;
}

std::string get_machine() {
  return core::builtin_machine_name(state().initialized ? state().env : detail::snapshot_env());
}

}  // namespace ezpz
