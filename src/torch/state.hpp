// The library's process-wide state, shared by dist.cpp (setup, collectives) and groups.cpp
// (tensor-parallel groups). Private: not installed.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <ezpz/torch.hpp>

#include "core/env.hpp"
#include "core/parallel_layout.hpp"

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

}  // namespace ezpz::detail
