#include "core/train/parallel_layout.hpp"

#include <algorithm>
#include <string>

namespace ezpz::core {

std::string_view to_string(ParallelDim d) {
  switch (d) {
    case ParallelDim::dp:
      return "dp";
    case ParallelDim::tp:
      return "tp";
    case ParallelDim::pp:
      return "pp";
    case ParallelDim::cp:
      return "cp";
  }
  return "?";
}

Expected<ParallelLayout> ParallelLayout::make(int world, int tp, int pp, int cp) {
  if (world < 1) {
    return usage_error("world size " + std::to_string(world) + " is not positive");
  }
  for (auto [name, value] : {std::pair{"tensor", tp}, std::pair{"pipeline", pp}, std::pair{"context", cp}}) {
    if (value < 1) {
      return usage_error(std::string(name) + " parallel size " + std::to_string(value) +
                         " must be at least 1: use 1 to turn it off");
    }
  }
  tp = std::min(tp, world);
  const std::string w = "world size " + std::to_string(world);
  const auto indivisible = [&w](const std::string& by) {
    return usage_error(w + " is not divisible by " + by + ": choose tp, pp and cp whose product divides it");
  };
  if (world % tp != 0) {
    return indivisible("tp " + std::to_string(tp));
  }
  if (world % cp != 0) {
    return indivisible("cp " + std::to_string(cp));
  }
  const long long model = static_cast<long long>(tp) * pp * cp;
  if (model > world || world % model != 0) {
    return indivisible("tp*pp*cp = " + std::to_string(tp) + "*" + std::to_string(pp) + "*" + std::to_string(cp) +
                       " = " + std::to_string(model));
  }
  ParallelLayout l;
  l.world_ = world;
  l.tp_ = tp;
  l.pp_ = pp;
  l.cp_ = cp;
  l.dp_ = world / static_cast<int>(model);
  return l;
}

int ParallelLayout::size(ParallelDim d) const {
  switch (d) {
    case ParallelDim::dp:
      return dp_;
    case ParallelDim::tp:
      return tp_;
    case ParallelDim::pp:
      return pp_;
    case ParallelDim::cp:
      return cp_;
  }
  return 1;
}

ParallelCoord ParallelLayout::coord(int rank) const {
  ParallelCoord c;
  c.tp = rank % tp_;
  rank /= tp_;
  c.cp = rank % cp_;
  rank /= cp_;
  c.pp = rank % pp_;
  c.dp = rank / pp_;
  return c;
}

int ParallelLayout::rank_of(const ParallelCoord& c) const {
  return ((c.dp * pp_ + c.pp) * cp_ + c.cp) * tp_ + c.tp;
}

namespace {
int& axis(ParallelCoord& c, ParallelDim d) {
  switch (d) {
    case ParallelDim::dp:
      return c.dp;
    case ParallelDim::tp:
      return c.tp;
    case ParallelDim::pp:
      return c.pp;
    case ParallelDim::cp:
      break;
  }
  return c.cp;
}
}  // namespace

int ParallelLayout::group_rank(ParallelDim d, int rank) const {
  auto c = coord(rank);
  return axis(c, d);
}

std::vector<int> ParallelLayout::members(ParallelDim d, int rank) const {
  auto c = coord(rank);
  std::vector<int> out;
  for (int i = 0; i < size(d); ++i) {
    axis(c, d) = i;
    out.push_back(rank_of(c));
  }
  return out;
}

int ParallelLayout::group_index(ParallelDim d, int rank) const {
  const int first = members(d, rank).front();
  int index = 0;
  for (int r = 0; r < first; ++r) {
    if (group_rank(d, r) == 0) {
      ++index;
    }
  }
  return index;
}

std::vector<std::vector<int>> ParallelLayout::groups(ParallelDim d) const {
  std::vector<std::vector<int>> out;
  for (int r = 0; r < world_; ++r) {
    if (group_rank(d, r) == 0) {
      out.push_back(members(d, r));
    }
  }
  return out;
}

}  // namespace ezpz::core
