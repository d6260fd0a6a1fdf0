// Small files read whole, through open_regular (never a FIFO or a device).
#pragma once

#include <cstddef>
#include <string>

#include "core/base/expected.hpp"

namespace ezpz::sys {

/// The first `n` bytes of a file (fewer when it is shorter).
Expected<std::string> read_head(const std::string& path, std::size_t n);

/// Read a whole file (at most `limit` bytes; more is an error).
Expected<std::string> read_whole(const std::string& path, std::size_t limit = std::size_t(1) << 30);

}  // namespace ezpz::sys
