#include "sys/fs/adaptive_zstd.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>

#include <zstd.h>

namespace ezpz::sys {
namespace {
/// How often the level is reconsidered, and the shares of waiting that move it.
constexpr double kWindowS = 0.25;
constexpr double kCpuBound = 0.25;     ///< waiting on the workers more than this: level down
constexpr double kNetworkBound = 0.5;  ///< else, waiting on the output more than this: level up
/// Below level 1 (the fast levels and no compression: a stream up to twice the size) only while
/// the output never waits, as on a link faster than any compression, and one rung per two
/// CPU-bound windows in a row (a busy moment, such as the relays' start on the head's cores, is
/// not a slow compressor). On a 200 Mbit/s link the controller went down to no compression at
/// the start and lost a second climbing back (scripts/bench/yeet_nodes.sh).
constexpr int kFastDownAfterWindows = 2;
constexpr double kOutputIdle = 0.05;
/// Raw blocks: at most 128 KiB each (the window below), a frame of them per 512 KiB of input.
constexpr std::size_t kRawBlock = 128 * 1024;
constexpr std::size_t kRawFrame = 4 * kRawBlock;

/// The next rung of the ladder from `level`, `step` up (+1) or down (-1).
int next_rung(int level, int step) {
  const auto* begin = std::begin(AdaptiveZstd::kLadder);
  const auto* end = std::end(AdaptiveZstd::kLadder);
  const auto* at = std::find(begin, end, level);
  if (at == end) {
    return level;
  }
  if (step < 0) {
    return at == begin ? level : *(at - 1);
  }
  return at + 1 == end ? level : *(at + 1);
}

/// A zstd frame holding `size` bytes of `data` as raw blocks: the magic number, a frame header
/// (no content size, no checksum, a 128 KiB window), then block headers (last-block bit, type
/// raw, size) each followed by its bytes.
std::string raw_frame(const char* data, std::size_t size) {
  std::string f = {'\x28', '\xb5', '\x2f', '\xfd', '\x00', static_cast<char>((17 - 10) << 3)};
  for (std::size_t off = 0; off < size; off += kRawBlock) {
    const auto n = std::min(kRawBlock, size - off);
    const auto header = static_cast<std::uint32_t>((n << 3) | (off + n == size ? 1U : 0U));
    f.push_back(static_cast<char>(header & 0xff));
    f.push_back(static_cast<char>((header >> 8) & 0xff));
    f.push_back(static_cast<char>((header >> 16) & 0xff));
    f.append(data + off, n);
  }
  return f;
}
}  // namespace

AdaptiveZstd::AdaptiveZstd(Output out, int fixed_level, unsigned threads, FrameCheck check)
    : out_(std::move(out)),
      cctx_(ZSTD_createCCtx()),
      buf_(ZSTD_CStreamOutSize()),
      adaptive_(fixed_level == 0),
      level_(fixed_level == 0 ? kStartLevel : fixed_level),
      min_used_(level_),
      max_used_(level_),
      window_start_(Clock::now()) {
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, level_ == kOff ? kLadder[1] : level_);
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, check == FrameCheck::xxh64 ? 1 : 0);
  // Workers make the level adjustable mid-frame (and use every core).
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_nbWorkers, static_cast<int>(std::max(1U, threads)));
}

AdaptiveZstd::~AdaptiveZstd() {
  ZSTD_freeCCtx(cctx_);
}

bool AdaptiveZstd::emit(std::size_t size) {
  if (size == 0) {
    return true;
  }
  const auto t = Clock::now();
  const bool ok = out_(buf_.data(), size);
  blocked_s_ += std::chrono::duration<double>(Clock::now() - t).count();
  return ok;
}

bool AdaptiveZstd::emit_raw(RawTail tail) {
  const bool all = tail == RawTail::send;
  std::size_t done = 0;
  while (raw_.size() - done >= kRawFrame || (all && done < raw_.size())) {
    const auto n = std::min(kRawFrame, raw_.size() - done);
    const auto frame = raw_frame(raw_.data() + done, n);
    const auto t = Clock::now();
    const bool ok = out_(frame.data(), frame.size());
    blocked_s_ += std::chrono::duration<double>(Clock::now() - t).count();
    if (!ok) {
      return false;
    }
    done += n;
  }
  raw_.erase(0, done);
  return true;
}

bool AdaptiveZstd::end_frame() {
  ZSTD_inBuffer in{nullptr, 0, 0};
  std::size_t remaining = 1;
  while (remaining != 0) {
    ZSTD_outBuffer o{buf_.data(), buf_.size(), 0};
    remaining = ZSTD_compressStream2(cctx_, &o, &in, ZSTD_e_end);
    if (ZSTD_isError(remaining) || !emit(o.pos)) {
      return false;
    }
  }
  return true;
}

void AdaptiveZstd::adapt() {
  const double window = std::chrono::duration<double>(Clock::now() - window_start_).count();
  if (!adaptive_ || window < kWindowS) {
    return;
  }
  int next = level_;
  const bool cpu_bound = compress_s_ / window > kCpuBound;
  cpu_bound_windows_ = cpu_bound ? cpu_bound_windows_ + 1 : 0;
  const bool into_fast = level_ <= 1;
  if (cpu_bound && (!into_fast || (cpu_bound_windows_ >= kFastDownAfterWindows && blocked_s_ / window < kOutputIdle))) {
    next = next_rung(level_, -1);
    cpu_bound_windows_ = 0;
  } else if (!cpu_bound && blocked_s_ / window > kNetworkBound) {
    next = next_rung(level_, +1);
  }
  // Into raw blocks: the zstd frame so far ends first; out of them: the next frame is zstd.
  const bool ok = next == level_ ? false : next == kOff ? end_frame() : level_ == kOff ? emit_raw(RawTail::send) : true;
  if (ok && (next == kOff || !ZSTD_isError(ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, next)))) {
    level_ = next;
    min_used_ = std::min(min_used_, level_);
    max_used_ = std::max(max_used_, level_);
  }
  window_start_ = Clock::now();
  blocked_s_ = 0;
  compress_s_ = 0;
}

bool AdaptiveZstd::write(const void* data, std::size_t size) {
  if (level_ == kOff) {
    raw_.append(static_cast<const char*>(data), size);
    const bool ok = emit_raw(RawTail::hold);
    adapt();
    return ok;
  }
  ZSTD_inBuffer in{data, size, 0};
  while (in.pos < in.size) {
    ZSTD_outBuffer o{buf_.data(), buf_.size(), 0};
    const auto t = Clock::now();
    const auto rc = ZSTD_compressStream2(cctx_, &o, &in, ZSTD_e_continue);
    compress_s_ += std::chrono::duration<double>(Clock::now() - t).count();
    if (ZSTD_isError(rc) || !emit(o.pos)) {
      return false;
    }
  }
  adapt();
  return true;
}

bool AdaptiveZstd::finish() {
  return level_ == kOff ? emit_raw(RawTail::send) : end_frame();
}

}  // namespace ezpz::sys
