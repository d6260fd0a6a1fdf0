// How ezpz starts itself on the job's other nodes, whichever command reaches them (yeet, doctor
// --nodes, kill --all-nodes, launch's failover probes): the transport, the ssh client and login,
// this binary and its digest, and the start script that runs it there or ships it first. Pure
// data; sys/remote and sys/agents move the bytes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ezpz::core {

/// How ezpz is started on other nodes: over SSH (built-in libssh or the user's ssh), or by the
/// job's own launcher (one agent per node, reached over TCP: sys/agents).
enum class TransportKind { ssh, launcher };
[[nodiscard]] std::string_view to_string(TransportKind kind);

/// Everything a transport reads to start ezpz on a node (yeet's stream settings are yeet's:
/// core/yeet/broadcast_spec.hpp).
struct ReachSpec {
  TransportKind transport = TransportKind::ssh;
  std::string self_exe;                  ///< ezpz's path here, tried first on the nodes (a shared filesystem)
  std::vector<std::string> ssh_command;  ///< e.g. {"ssh", "-o", "BatchMode=yes"}; empty: built-in libssh
  bool accept_new_host_keys = false;     ///< built-in transport: add unknown host keys to known_hosts
  std::string user;                      ///< built-in transport: login name when ~/.ssh/config has none
  std::string exe_digest;                ///< SHA-256 (hex) of ezpz; empty: trust self_exe on the nodes
  unsigned long long exe_size = 0;       ///< its size in bytes (what a node without it reads)
  bool encrypt = true;  ///< sealed TCP streams (both transports): encrypt (every frame is authenticated anyway)
  // The head only (the launcher transport; relays reach the agents it started):
  std::vector<std::string> agent_step;  ///< the launcher command that starts one agent per node (core/reach/agents)
  std::string agent_head;               ///< the name or address agents dial to reach this node
  double agent_timeout_s = 60;          ///< every agent registers within this, or its node fails
};

/// First lines a remote ezpz start writes on stdout: it is running and reads its stdin
/// ("EZPZ-READY"), or the node lacks this binary and reads `<size>` bytes of it first
/// ("EZPZ-SHIP <size>").
inline constexpr std::string_view kReadyLine = "EZPZ-READY";
inline constexpr std::string_view kShipLine = "EZPZ-SHIP";

/// yeet's relay row (`ezpz __yeet-relay`): what an agent may start with a stream on its stdin.
inline constexpr std::string_view kRelayRow = "__yeet-relay";

/// Whether ezpz is shipped to a node that lacks it (where the transport ships: the SSH one,
/// remote_command), or must be there already.
enum class Ship { never, when_missing };

/// The shell command that runs `ezpz args...` on a node: `self_exe` when it is there with the
/// same SHA-256, else a copy cached in $TMPDIR (or /tmp)/.ezpz-<uid>-<digest>/ezpz, else (with
/// Ship::when_missing) it asks for the binary on stdin (kShipLine), checks its digest and runs it.
/// Every path and argument reaches the remote shell as a quoted word (sh -c SCRIPT _ ARGS).
[[nodiscard]] std::string remote_command(const ReachSpec& spec, const std::vector<std::string>& args, Ship ship);

}  // namespace ezpz::core
