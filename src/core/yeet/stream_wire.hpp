// The stream yeet's relays pass on: its framing, its keepalives and its timeouts, and what the
// head reports of it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ezpz::core {

/// The stream: "EZPZYEET1\n", then frames (4-byte big-endian length, data), then a frame of
/// length 0 followed by the 32-byte SHA-256 of all data bytes. The data is a tar.zst.
/// Between frames, a header of length kKeepaliveLength (no data) says "still here": each
/// sender writes one to a child it has sent nothing else for a second (not forwarded).
inline constexpr std::string_view kStreamMagic = "EZPZYEET1\n";
inline constexpr std::size_t kDigestSize = 32;
inline constexpr std::uint32_t kKeepaliveLength = 0xFFFFFFFFU;
/// A header of this length, followed by the 32-byte SHA-256 of a manifest, announces that the
/// data will be a delta bundle starting from that manifest: a relay whose copy holds it may
/// start cloning that copy at once, while the head still builds the bundle. Forwarded; not
/// part of the data or its digest.
inline constexpr std::uint32_t kAnnounceLength = 0xFFFFFFFEU;
/// A relay gives up on its parent when it hears nothing, not even a keepalive, for the head's
/// stall timeout plus this (the first bytes come once the head's children are all ready, up
/// to the head's stall timeout after it started them).
inline constexpr double kParentGraceS = 10;

[[nodiscard]] std::array<unsigned char, 4> frame_header(std::uint32_t length);
[[nodiscard]] std::uint32_t frame_length(const unsigned char* header);

/// Relays one level down wait 2 s less for a stalled child, down to this.
inline constexpr double kMinStallTimeoutS = 6;

/// A relay's sign of life (every second from the end of its stream to its last result line):
/// after the stream a parent drops a child that says nothing for its stall timeout
/// (sys/heartbeat.hpp).
inline constexpr std::string_view kAliveLine = "EZPZ-ALIVE";

/// What the head sent: stream bytes (compressed) and the zstd levels it used.
struct StreamStats {
  unsigned long long bytes = 0;
  int level_min = 0;
  int level_max = 0;
  int level_final = 0;
};

}  // namespace ezpz::core
