// The tensor-parallel groups: ezpz's (dp, pp, cp, tp) layout (core/train/parallel_layout) made into
// process groups, and their getters.
#include <ezpz/torch.hpp>

#include "core/train/parallel_layout.hpp"
#include "torch/state.hpp"

namespace ezpz {
using detail::fail;
using detail::make_group;
using detail::state;

namespace tp {

void initialize_tensor_parallel(int tensor_parallel_size, int pipeline_parallel_size, int context_parallel_size) {
  auto& s = state();
  if (!s.initialized) {
    fail("initialize_tensor_parallel() before setup(): call ezpz::setup() first");
  }
  if (s.layout) {
    fail("tensor parallel groups are already initialized (tp=" + std::to_string(s.layout->size(core::ParallelDim::tp)) +
         ", pp=" + std::to_string(s.layout->size(core::ParallelDim::pp)) + ", cp=" +
         std::to_string(s.layout->size(core::ParallelDim::cp)) + "): call ezpz::tp::destroy_tensor_parallel() first");
  }
  auto layout = core::ParallelLayout::make(s.info.world_size, tensor_parallel_size, pipeline_parallel_size,
                                           context_parallel_size);
  if (!layout) {
    fail(layout.error().message);
  }
  const int me = s.info.rank;
  const std::string base = "tp" + std::to_string(s.tp_generation++) + "/";
  // ezpz's creation order: DP, TP, PP, CP. Each rank builds only its own four groups, over
  // key spaces named by the group, so every member agrees without a global sequence.
  Group* slots[] = {&s.dp, &s.tp, &s.pp, &s.cp};
  try {
    for (std::size_t i = 0; i < core::kParallelDims.size(); ++i) {
      const auto d = core::kParallelDims[i];
      const std::string name =
          base + std::string(core::to_string(d)) + "/" + std::to_string(layout->group_index(d, me));
      *slots[i] = make_group(name, layout->members(d, me));
    }
  } catch (...) {
    s.dp = s.tp = s.pp = s.cp = {};
    throw;
  }
  s.layout = *layout;
}

void destroy_tensor_parallel() {
  auto& s = state();
  s.layout.reset();
  s.dp = s.tp = s.pp = s.cp = {};
}

bool tensor_parallel_is_initialized() {
  return state().layout.has_value();
}

namespace {
const Group& checked(const Group& g, const char* what) {
  if (!state().layout) {
    fail(std::string(what) + " parallel group is not initialized: call ezpz::tp::initialize_tensor_parallel first");
  }
  return g;
}
int rank_in(const Group& g) {
  return state().layout ? g.rank() : 0;
}
int size_of(const Group& g) {
  return state().layout ? g.size() : 1;
}
}  // namespace

Group get_tensor_parallel_group() {
  return checked(state().tp, "tensor");
}
Group get_data_parallel_group() {
  return checked(state().dp, "data");
}
Group get_pipeline_parallel_group() {
  return checked(state().pp, "pipeline");
}
Group get_context_parallel_group() {
  return checked(state().cp, "context");
}
int get_tensor_parallel_rank() {
  return rank_in(state().tp);
}
int get_tensor_parallel_world_size() {
  return size_of(state().tp);
}
int get_data_parallel_rank() {
  return rank_in(state().dp);
}
int get_data_parallel_world_size() {
  return size_of(state().dp);
}
int get_pipeline_parallel_rank() {
  return rank_in(state().pp);
}
int get_pipeline_parallel_world_size() {
  return size_of(state().pp);
}
int get_context_parallel_rank() {
  return rank_in(state().cp);
}
int get_context_parallel_world_size() {
  return size_of(state().cp);
}
int get_tensor_parallel_src_rank() {
  const int tp = get_tensor_parallel_world_size();
  return (get_rank() / tp) * tp;
}

}  // namespace tp
}  // namespace ezpz
