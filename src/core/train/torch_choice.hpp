// What libezpz_torch runs on, decided from plain facts (pure: no libtorch, no process state):
// the device type and backend setup() uses, the device a rank takes, and the machine name
// get_machine() reports. src/torch gathers the facts from libtorch and the environment.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/base/env.hpp"

namespace ezpz::core {

/// What this libtorch sees on the node.
struct DeviceFacts {
  bool has_xpu = false;
  int cuda_device_count = 0;
  bool has_mps = false;
};

/// What was asked: SetupOptions' device and backend ("" = not given), then the environment's
/// TORCH_DEVICE and TORCH_BACKEND ("" = unset).
struct TorchWants {
  std::string_view device;
  std::string_view backend;
  std::string_view env_device;
  std::string_view env_backend;
};

struct TorchChoice {
  std::string device_type;   ///< "cpu", "cuda", "xpu", "mps", ...
  std::optional<int> index;  ///< an index the request named ("cuda:1"); else from the local rank
  std::string backend;       ///< "gloo", "nccl", "xccl", or what was asked
};

/// The device type first: the option, else TORCH_DEVICE, else xpu, cuda, mps, cpu (what the
/// node has); then the backend for THAT type: the option, else TORCH_BACKEND, else nccl for
/// cuda, xccl for xpu, gloo otherwise. A request "TYPE:N" names the type and the index.
[[nodiscard]] TorchChoice choose_torch(const TorchWants& wants, const DeviceFacts& facts);

/// The backend ezpz pairs with `device_type`: nccl (cuda), xccl (xpu), gloo.
[[nodiscard]] std::string default_backend(std::string_view device_type);

/// The device string for torch::Device: "cpu" and "mps" as they are; cuda: the named index,
/// else the local rank modulo the visible devices (0 when none is visible); other accelerators:
/// the named index, else the local rank.
[[nodiscard]] std::string device_string(const TorchChoice& choice, int local_rank, const DeviceFacts& facts);

/// The machine name ezpz's detection gives from the hostname and the environment alone:
/// EZPZ_MACHINE when set, else the built-in profiles' rules of src/core/job/machines.toml (own
/// hostname prefix; shared prefix with the site's variable; shared prefix guessed), else
/// "local". User machine files are not read (that needs the CLI's TOML parser).
[[nodiscard]] std::string builtin_machine_name(const Env& env);

}  // namespace ezpz::core
