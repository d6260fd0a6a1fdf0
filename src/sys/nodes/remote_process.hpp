// A command started on another node through a core::Transport, whatever the transport: open
// its gate, wait for the remote ezpz to be ready (shipping this binary to a node that asks).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "core/transport.hpp"

namespace ezpz::sys {

using core::RemoteProcess;

/// Connections being set up at once when many nodes are asked the same thing (doctor --nodes,
/// kill --all-nodes): the rest wait at their gates. All at once, a hundred handshakes (and
/// the nodes' login shells) compete for the same moment and time out together.
inline constexpr std::size_t kMaxConnecting = 32;

/// Open the gate of a process started `gated`: it connects from now. False when it is gone.
[[nodiscard]] bool open_gate(RemoteProcess& p);
/// Wait for the remote ezpz's first line (core::kReadyLine), shipping this binary to a node
/// that asks for it (core::kShipLine). Lines that are neither (a connection error's result
/// line) are appended to `early`. False when it ended or was not ready within `timeout_s`.
[[nodiscard]] bool await_ready(RemoteProcess& p, std::string& early, int timeout_s);
/// The same, with `deadline` for the whole wait (a slow trickle of lines does not extend it).
[[nodiscard]] bool await_ready(RemoteProcess& p, std::string& early, std::chrono::steady_clock::time_point deadline);

}  // namespace ezpz::sys
