#include <catch2/catch.hpp>

#include <chrono>
#include <random>
#include <string>
#include <thread>

#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_getFrameHeader
#include <zstd.h>
#include <zstd_errors.h>

#include "sys/fs/adaptive_zstd.hpp"

using ezpz::sys::AdaptiveZstd;
using ezpz::sys::FrameCheck;

namespace {
/// Text-like input that compresses, but not to nothing.
std::string sample(std::size_t size) {
  std::mt19937 rng(42);
  const char* words[] = {"import ", "torch", " def ", "return ", "self.", "x", "(", ")", "\n", "    ", "0123", "_y"};
  std::string s;
  while (s.size() < size) {
    s += words[rng() % 12];
  }
  return s;
}

std::string decompress(const std::string& frame) {
  std::string out;
  ZSTD_DCtx* d = ZSTD_createDCtx();
  ZSTD_inBuffer in{frame.data(), frame.size(), 0};
  std::string buf(1 << 16, '\0');
  while (in.pos < in.size) {
    ZSTD_outBuffer o{buf.data(), buf.size(), 0};
    const auto rc = ZSTD_decompressStream(d, &o, &in);
    REQUIRE_FALSE(ZSTD_isError(rc));
    out.append(buf.data(), o.pos);
  }
  ZSTD_freeDCtx(d);
  return out;
}
}  // namespace

TEST_CASE("adaptive zstd: a slow link raises the level, and the stream still decompresses", "[zstd]") {
  // The input is fed (24 MB over and over) until the level rises, or 40 s: on two busy cores the
  // compression workers themselves can be slow for a while, and the level rises only once the
  // output is what holds the stream up (waiting for a state, not a fixed amount).
  const auto input = sample(24 << 20);
  std::string frame;
  AdaptiveZstd z(
      [&](const void* data, std::size_t size) {
        frame.append(static_cast<const char*>(data), size);
        std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the network is the bottleneck
        return true;
      },
      0, 2, FrameCheck::none);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(40);  // within ctest's 60
  std::size_t fed = 0;
  while (fed < input.size() ||
         (z.max_level_used() <= AdaptiveZstd::kStartLevel && std::chrono::steady_clock::now() < until)) {
    const std::size_t at = fed % input.size();
    const std::size_t n = std::min<std::size_t>(1 << 16, input.size() - at);
    REQUIRE(z.write(input.data() + at, n));
    fed += n;
  }
  REQUIRE(z.finish());
  CHECK(z.max_level_used() > AdaptiveZstd::kStartLevel);
  CHECK(z.max_level_used() <= AdaptiveZstd::kMaxLevel);
  const auto out = decompress(frame);  // the input, as many times as it was fed
  REQUIRE(out.size() == fed);
  for (std::size_t at = 0; at < fed; at += input.size()) {
    CHECK(out.compare(at, std::min(input.size(), fed - at), input, 0, std::min(input.size(), fed - at)) == 0);
  }
}

TEST_CASE("adaptive zstd: while the output waits, the level never falls below 1", "[zstd]") {
  // A slow link and (on two busy cores, or under a sanitizer) slow workers at once: a stream
  // below level 1 (up to twice the size) would only make the link the worse bottleneck.
  const auto input = sample(8 << 20);
  AdaptiveZstd z(
      [&](const void*, std::size_t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the output always waits
        return true;
      },
      0, 1, FrameCheck::none);
  for (std::size_t at = 0; at < input.size(); at += 1 << 16) {
    REQUIRE(z.write(input.data() + at, std::min<std::size_t>(1 << 16, input.size() - at)));
  }
  REQUIRE(z.finish());
  CHECK(z.min_level_used() >= 1);
}

TEST_CASE("adaptive zstd: a fixed level stays fixed, a refusing output stops it", "[zstd]") {
  const auto input = sample(4 << 20);
  std::string frame;
  AdaptiveZstd z(
      [&](const void* data, std::size_t size) {
        frame.append(static_cast<const char*>(data), size);
        return true;
      },
      7, 1, FrameCheck::xxh64);
  REQUIRE(z.write(input.data(), input.size()));
  REQUIRE(z.finish());
  CHECK(z.min_level_used() == 7);
  CHECK(z.max_level_used() == 7);
  CHECK(decompress(frame) == input);

  AdaptiveZstd refused([](const void*, std::size_t) { return false; }, 0, 1, FrameCheck::none);
  bool ok = refused.write(input.data(), input.size());
  ok = ok && refused.finish();
  CHECK_FALSE(ok);
}

TEST_CASE("adaptive zstd: no compression is raw zstd frames, and frames of both kinds read as one stream", "[zstd]") {
  const auto input = sample(3 << 20);
  std::string raw;
  AdaptiveZstd off(
      [&](const void* data, std::size_t size) {
        raw.append(static_cast<const char*>(data), size);
        return true;
      },
      AdaptiveZstd::kOff, 1, FrameCheck::none);
  for (std::size_t i = 0; i < input.size(); i += 10240) {  // as libarchive writes tar
    REQUIRE(off.write(input.data() + i, std::min<std::size_t>(10240, input.size() - i)));
  }
  REQUIRE(off.finish());
  CHECK(off.max_level_used() == AdaptiveZstd::kOff);
  CHECK(raw.size() > input.size());              // nothing compressed...
  CHECK(raw.size() < input.size() + (8 << 10));  // ...and a few bytes of framing per 128 KiB
  CHECK(decompress(raw) == input);
  // A zstd frame, then raw frames, then zstd again: what the controller sends as it moves.
  std::string mixed;
  auto sink = [&](const void* data, std::size_t size) {
    mixed.append(static_cast<const char*>(data), size);
    return true;
  };
  for (const int level : {3, AdaptiveZstd::kOff, -16}) {
    AdaptiveZstd z(sink, level, 1, FrameCheck::none);
    REQUIRE(z.write(input.data(), input.size()));
    REQUIRE(z.finish());
  }
  CHECK(decompress(mixed) == input + input + input);
}

TEST_CASE("adaptive zstd: an archive's frames carry XXH64, the stream's none (its SHA-256 checks it)", "[zstd]") {
  const auto input = sample(1 << 20);
  for (const auto check : {FrameCheck::xxh64, FrameCheck::none}) {
    std::string frame;
    AdaptiveZstd z(
        [&](const void* data, std::size_t size) {
          frame.append(static_cast<const char*>(data), size);
          return true;
        },
        3, 1, check);
    REQUIRE(z.write(input.data(), input.size()));
    REQUIRE(z.finish());
    ZSTD_frameHeader header{};
    REQUIRE(ZSTD_getFrameHeader(&header, frame.data(), frame.size()) == 0);
    CHECK(header.checksumFlag == (check == FrameCheck::xxh64 ? 1U : 0U));
    CHECK(decompress(frame) == input);
    if (check == FrameCheck::xxh64) {  // a damaged checksum is found by any reader
      frame.back() = static_cast<char>(frame.back() ^ 1);
      ZSTD_DCtx* d = ZSTD_createDCtx();
      std::string out(input.size() + 1024, '\0');
      const auto rc = ZSTD_decompressDCtx(d, out.data(), out.size(), frame.data(), frame.size());
      ZSTD_freeDCtx(d);
      CHECK(ZSTD_getErrorCode(rc) == ZSTD_error_checksum_wrong);
    }
  }
}
