// The stream yeet sends to other nodes: zstd, multithreaded, with a compression level that
// follows the link. The head's thread either waits for the compression workers (CPU-bound:
// level down) or for the nodes to take the output (network-bound, the workers idle: level up,
// a smaller stream for the same time). Down through zstd's fast (negative) levels to no
// compression at all (kOff: the data in zstd raw blocks, framed by hand, at memory speed) where
// the network is faster than any compression; back up when the network is the bottleneck. The
// output is zstd frames one after another, which every zstd reader takes as one stream.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

struct ZSTD_CCtx_s;

namespace ezpz::sys {

/// Whether each zstd frame carries its own checksum (XXH64). An archive file does: damage on a
/// shared filesystem is found when it is read. yeet's stream does not: SHA-256 of the whole
/// stream and of the tree each node built check more, and XXH64 cost every node 4% of its CPU
/// (scripts/bench/yeet_cpu.sh).
enum class FrameCheck { xxh64, none };

class AdaptiveZstd {
 public:
  using Output = std::function<bool(const void* data, std::size_t size)>;
  /// `fixed_level` 0 adapts along kLadder, starting at kStartLevel; kOff fixes no compression.
  AdaptiveZstd(Output out, int fixed_level, unsigned threads, FrameCheck check);
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

  /// No compression: zstd raw blocks (reported as level 0).
  static constexpr int kOff = -1000;
  static constexpr int kMinLevel = kOff;
  static constexpr int kStartLevel = 3;
  static constexpr int kMaxLevel = 9;
  /// The levels the controller moves along, fastest first.
  static constexpr int kLadder[] = {kOff, -64, -16, -4, -1, 1, 2, 3, 4, 5, 6, 7, 8, 9};

 private:
  using Clock = std::chrono::steady_clock;
  bool emit(std::size_t size);
  /// Whether emit_raw also sends a last frame shorter than kRawFrame (the level changes, or the end).
  enum class RawTail { hold, send };
  bool emit_raw(RawTail tail);
  bool end_frame();
  void adapt();

  Output out_;
  ZSTD_CCtx_s* cctx_;
  std::vector<char> buf_;
  std::string raw_;  ///< input waiting to go out in raw blocks (kOff)
  bool adaptive_;
  int level_;
  int min_used_;
  int max_used_;
  Clock::time_point window_start_;
  double blocked_s_ = 0;       ///< time spent waiting on the output in this window
  double compress_s_ = 0;      ///< time spent waiting on the workers in this window
  int cpu_bound_windows_ = 0;  ///< windows in a row that waited on the workers
};

}  // namespace ezpz::sys
