// The stream yeet sends to other nodes: zstd, multithreaded, with a compression level that
// follows the link. The head's thread either waits for the compression workers (CPU-bound:
// level down) or for the nodes to take the output (network-bound, the workers idle: level up,
// a smaller stream for the same time).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <vector>

struct ZSTD_CCtx_s;

namespace ezpz::sys {

class AdaptiveZstd {
 public:
  using Output = std::function<bool(const void* data, std::size_t size)>;
  /// `fixed_level` 0 adapts between kMinLevel and kMaxLevel, starting at kStartLevel.
  AdaptiveZstd(Output out, int fixed_level, unsigned threads);
  ~AdaptiveZstd();
  AdaptiveZstd(const AdaptiveZstd&) = delete;
  AdaptiveZstd& operator=(const AdaptiveZstd&) = delete;

  /// Compress more input; false once the output refused data or zstd failed.
  bool write(const void* data, std::size_t size);
  /// End the frame and flush it.
  bool finish();

  [[nodiscard]] int level() const { return level_; }
  [[nodiscard]] int min_level_used() const { return min_used_; }
  [[nodiscard]] int max_level_used() const { return max_used_; }

  static constexpr int kMinLevel = 1;
  static constexpr int kStartLevel = 3;
  static constexpr int kMaxLevel = 9;

 private:
  using Clock = std::chrono::steady_clock;
  bool emit(std::size_t size);
  void adapt();

  Output out_;
  ZSTD_CCtx_s* cctx_;
  std::vector<char> buf_;
  bool adaptive_;
  int level_;
  int min_used_;
  int max_used_;
  Clock::time_point window_start_;
  double blocked_s_ = 0;   ///< time spent waiting on the output in this window
  double compress_s_ = 0;  ///< time spent waiting on the workers in this window
};

}  // namespace ezpz::sys
