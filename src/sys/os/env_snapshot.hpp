// Build the Env snapshot from the real process (the only getenv in ezpz).
#pragma once

#include "core/base/env.hpp"

namespace ezpz::sys {

/// environ, gethostname() and getuid(), read once.
[[nodiscard]] core::Env snapshot_environment();

/// Whether the file descriptor is a terminal.
[[nodiscard]] bool is_terminal(int fd);
/// The terminal's width in columns; 0 when `fd` is no terminal (or does not say).
[[nodiscard]] std::size_t terminal_columns(int fd);

}  // namespace ezpz::sys
