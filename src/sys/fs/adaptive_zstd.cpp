#include "sys/fs/adaptive_zstd.hpp"

#include <algorithm>

#include <zstd.h>

namespace ezpz::sys {
namespace {
/// How often the level is reconsidered, and the shares of waiting that move it.
constexpr double kWindowS = 0.25;
constexpr double kCpuBound = 0.25;     ///< waiting on the workers more than this: level down
constexpr double kNetworkBound = 0.5;  ///< else, waiting on the output more than this: level up
}  // namespace

AdaptiveZstd::AdaptiveZstd(Output out, int fixed_level, unsigned threads)
    : out_(std::move(out)),
      cctx_(ZSTD_createCCtx()),
      buf_(ZSTD_CStreamOutSize()),
      adaptive_(fixed_level == 0),
      level_(fixed_level == 0 ? kStartLevel : fixed_level),
      min_used_(level_),
      max_used_(level_),
      window_start_(Clock::now()) {
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, level_);
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 1);  // each frame checks itself (XXH64: near free)
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

void AdaptiveZstd::adapt() {
  const double window = std::chrono::duration<double>(Clock::now() - window_start_).count();
  if (!adaptive_ || window < kWindowS) {
    return;
  }
  int next = level_;
  if (compress_s_ / window > kCpuBound) {
    next = std::max(kMinLevel, level_ - 1);
  } else if (blocked_s_ / window > kNetworkBound) {
    next = std::min(kMaxLevel, level_ + 1);
  }
  if (next != level_ && !ZSTD_isError(ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, next))) {
    level_ = next;
    min_used_ = std::min(min_used_, level_);
    max_used_ = std::max(max_used_, level_);
  }
  window_start_ = Clock::now();
  blocked_s_ = 0;
  compress_s_ = 0;
}

bool AdaptiveZstd::write(const void* data, std::size_t size) {
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

}  // namespace ezpz::sys
