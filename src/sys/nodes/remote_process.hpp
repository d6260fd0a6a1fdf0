// A command started on another node through a core::Transport, whatever the transport: owned
// from receipt (RemoteChild), its gate opened, the remote ezpz awaited (shipping this binary to
// a node that asks).
#pragma once

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <string>

#include "core/reach/transport.hpp"
#include "sys/os/fd_io.hpp"
#include "sys/os/owned.hpp"

namespace ezpz::sys {

using core::RemoteProcess;

/// Connections being set up at once when many nodes are asked the same thing (doctor --nodes,
/// kill --all-nodes): the rest wait at their gates. All at once, a hundred handshakes (and
/// the nodes' login shells) compete for the same moment and time out together.
inline constexpr std::size_t kMaxConnecting = 32;

/// The transport's reach to `hosts` for one run (the launcher transport's agents; nothing for
/// SSH), closed however the run ends. A node without reach fails when its command starts.
class NodesOpen {
 public:
  NodesOpen(core::Transport& t, const core::HostList& hosts, const core::ReachSpec& spec) : t_(t) {
    (void)t_.open_nodes(hosts, spec, nullptr, nullptr);
  }
  ~NodesOpen() { t_.close_nodes(); }
  NodesOpen(const NodesOpen&) = delete;
  NodesOpen& operator=(const NodesOpen&) = delete;

 private:
  core::Transport& t_;
};

/// A core::RemoteProcess owned from its receipt: its descriptors close, and its child is killed
/// (SIGKILL) and reaped, with it unless they were closed or waited for first. Nothing from a
/// start that failed (pid -1) is kept. Move-only.
struct RemoteChild {
  RemoteChild() = default;
  explicit RemoteChild(const RemoteProcess& p) : child(p.pid), in(p.in), out(p.out) {
    if (!child.owned()) {
      in.reset();
      out.reset();
    }
  }

  /// Started and not yet waited for.
  [[nodiscard]] bool started() const { return child.owned(); }
  /// The plain numbers, for a moment (open_gate, await_ready): they stay owned here.
  [[nodiscard]] RemoteProcess view() const { return {child.pid(), in.get(), out.get()}; }
  /// SIGTERM to the child, while it is owned (never to a pid it does not hold).
  void terminate() const {
    if (child.owned()) {
      ::kill(child.pid(), SIGTERM);
    }
  }

  // Declared in this order so that, on destruction, both ends close before the child is killed.
  OwnedChild child;
  OwnedFd in;   ///< its stdin (-1 without)
  OwnedFd out;  ///< its stdout
};

/// Open the gate of a process started `gated`: it connects from now. False when it is gone.
[[nodiscard]] bool open_gate(const RemoteProcess& p);
[[nodiscard]] inline bool open_gate(const RemoteChild& p) {
  return open_gate(p.view());
}
/// Wait for the remote ezpz's first line (core::kReadyLine), shipping this binary to a node
/// that asks for it (core::kShipLine). Lines that are neither (a connection error's result
/// line) are appended to `early`. False when it ended or was not ready within `timeout_s`.
[[nodiscard]] bool await_ready(const RemoteProcess& p, std::string& early, int timeout_s);
/// The same, with `deadline` for the whole wait (a slow trickle of lines does not extend it);
/// false within a tenth of a second once `*cancel` is set, when given.
[[nodiscard]] bool await_ready(const RemoteProcess& p, std::string& early,
                               std::chrono::steady_clock::time_point deadline,
                               const std::atomic<bool>* cancel = nullptr);
[[nodiscard]] inline bool await_ready(const RemoteChild& p, std::string& early, int timeout_s) {
  return await_ready(p.view(), early, timeout_s);
}
[[nodiscard]] inline bool await_ready(const RemoteChild& p, std::string& early,
                                      std::chrono::steady_clock::time_point deadline,
                                      const std::atomic<bool>* cancel = nullptr) {
  return await_ready(p.view(), early, deadline, cancel);
}

}  // namespace ezpz::sys
