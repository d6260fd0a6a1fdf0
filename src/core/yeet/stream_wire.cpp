#include "core/yeet/stream_wire.hpp"

namespace ezpz::core {

std::array<unsigned char, 4> frame_header(std::uint32_t length) {
  return {static_cast<unsigned char>(length >> 24), static_cast<unsigned char>(length >> 16),
          static_cast<unsigned char>(length >> 8), static_cast<unsigned char>(length)};
}

std::uint32_t frame_length(const unsigned char* h) {
  return (std::uint32_t{h[0]} << 24) | (std::uint32_t{h[1]} << 16) | (std::uint32_t{h[2]} << 8) | std::uint32_t{h[3]};
}

}  // namespace ezpz::core
