// The (dp, pp, cp, tp) rank layout of ezpz's tensor/pipeline/context/data parallel groups:
// global ranks reshaped to a 4-D grid with TP fastest (Megatron's and ezpz's order), so
// rank = ((d * pp + p) * cp + c) * tp + t. Pure arithmetic, shared by the companion library
// (which builds one process group per row) and its tests.
#pragma once

#include <array>
#include <string_view>
#include <vector>

#include "core/base/expected.hpp"

namespace ezpz::core {

/// The four parallel dimensions, in the order their groups are created (ezpz: DP, TP, PP, CP).
enum class ParallelDim { dp, tp, pp, cp };
inline constexpr std::array<ParallelDim, 4> kParallelDims = {ParallelDim::dp, ParallelDim::tp, ParallelDim::pp,
                                                             ParallelDim::cp};
[[nodiscard]] std::string_view to_string(ParallelDim d);

/// A rank's coordinates in the grid.
struct ParallelCoord {
  int dp = 0;
  int pp = 0;
  int cp = 0;
  int tp = 0;
  bool operator==(const ParallelCoord&) const = default;
};

class ParallelLayout {
 public:
  /// Sizes must be positive; tp is clamped to the world size (ezpz's rule). Errors name the
  /// numbers that do not divide.
  [[nodiscard]] static Expected<ParallelLayout> make(int world, int tp, int pp = 1, int cp = 1);

  [[nodiscard]] int world() const { return world_; }
  [[nodiscard]] int size(ParallelDim d) const;
  [[nodiscard]] ParallelCoord coord(int rank) const;
  [[nodiscard]] int rank_of(const ParallelCoord& c) const;
  /// Position of `rank` inside its group along `d` (its coordinate on that axis).
  [[nodiscard]] int group_rank(ParallelDim d, int rank) const;
  /// The global ranks of `rank`'s group along `d`, ascending.
  [[nodiscard]] std::vector<int> members(ParallelDim d, int rank) const;
  /// Which of the world / size(d) groups along `d` holds `rank` (0-based, in creation order).
  [[nodiscard]] int group_index(ParallelDim d, int rank) const;
  /// Every group along `d`, in creation order (ascending by first member).
  [[nodiscard]] std::vector<std::vector<int>> groups(ParallelDim d) const;

 private:
  int world_ = 1;
  int tp_ = 1;
  int pp_ = 1;
  int cp_ = 1;
  int dp_ = 1;
};

}  // namespace ezpz::core
