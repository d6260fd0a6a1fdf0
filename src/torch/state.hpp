// The library's process-wide state, shared by dist.cpp (setup, collectives), groups.cpp
// (tensor-parallel groups) and device.cpp (device, backend, machine). Private: not installed;
// nothing here is exported (the library is built with hidden visibility).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ezpz/torch.hpp>

#include "core/base/env.hpp"
#include "core/train/parallel_layout.hpp"
#include "core/train/torch_choice.hpp"

namespace c10d {
class Store;
}

namespace ezpz::detail {

struct State {
  bool initialized = false;
  DistInfo info;
  core::Env env;
  c10::intrusive_ptr<c10d::Store> store;
  std::string prefix;  ///< "ezpz/<setup generation>/"
  int generation = 0;
  int groups_made = 0;
  std::chrono::milliseconds timeout{0};
  Group world;
  // tensor parallel
  std::optional<core::ParallelLayout> layout;
  int tp_generation = 0;
  Group tp, dp, pp, cp;
};

State& state();
/// Throw std::runtime_error("ezpz: " + message).
[[noreturn]] void fail(const std::string& message);
/// A process group of `members` (this rank's; an empty Group when it is not one of them)
/// over its own key space `name` in the rendezvous store.
Group make_group(const std::string& name, std::vector<int> members);

/// The process environment, hostname and pid.
core::Env snapshot_env();
/// What this libtorch sees on the node (xpu, the CUDA devices, mps).
core::DeviceFacts device_facts();
/// core::choose_torch with `env`'s TORCH_DEVICE and TORCH_BACKEND.
core::TorchChoice choose_device(std::string_view device, std::string_view backend, const core::Env& env,
                                const core::DeviceFacts& facts);
/// The torch::Device of `choice` for `local_rank`; a name libtorch does not know is an error.
torch::Device make_device(const core::TorchChoice& choice, int local_rank, const core::DeviceFacts& facts);

}  // namespace ezpz::detail
