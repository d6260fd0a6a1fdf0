// Fan-out planning for yeet to every node: target hosts, the relay tree, and the wire
// format of the stream relays pass on. Pure data; sys/ moves the bytes.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/expected.hpp"
#include "core/job/hostlist.hpp"
#include "core/ports/probe.hpp"

namespace ezpz::core {

/// Remote targets from the job's hosts: deduplicated by short name (order kept), the
/// current node left out (it gets the local copy), each replaced by <short>-hsn0 when that
/// resolves and `use_hsn` is set.
[[nodiscard]] HostList yeet_targets(const HostList& hosts, const std::string& this_host, bool use_hsn,
                                    const HostProbe& probe);

/// A relay and the relays it feeds.
struct RelayNode {
  std::string host;
  std::vector<RelayNode> children;
  bool operator==(const RelayNode&) const = default;
};

/// A tree of relays over `targets`, breadth first, `fanout` children per node (the head
/// included): the first `fanout` targets are fed by the head, and so on.
[[nodiscard]] std::vector<RelayNode> relay_tree(const HostList& targets, int fanout);

/// All hosts in a subtree, the root first.
[[nodiscard]] HostList subtree_hosts(const RelayNode& node);

/// "a(b(d),c)" for the relay's --children argument; host names cannot hold "(),".
[[nodiscard]] std::string encode_tree(const std::vector<RelayNode>& nodes);
[[nodiscard]] Expected<std::vector<RelayNode>> decode_tree(std::string_view text);

/// The stream: "EZPZYEET1\n", then frames (4-byte big-endian length, data), then a frame of
/// length 0 followed by the 32-byte SHA-256 of all data bytes. The data is a tar.zst.
/// Between frames, a header of length kKeepaliveLength (no data) says "still here": each
/// sender writes one to a child it has sent nothing else for a second (not forwarded).
inline constexpr std::string_view kStreamMagic = "EZPZYEET1\n";
inline constexpr std::size_t kDigestSize = 32;
inline constexpr std::uint32_t kKeepaliveLength = 0xFFFFFFFFU;
/// A relay gives up on its parent when it hears nothing, not even a keepalive, for the head's
/// stall timeout plus this (the first bytes come once the head's children are all ready, up
/// to the head's stall timeout after it started them).
inline constexpr double kParentGraceS = 10;

[[nodiscard]] std::array<unsigned char, 4> frame_header(std::uint32_t length);
[[nodiscard]] std::uint32_t frame_length(const unsigned char* header);

/// How relays are started on other nodes: over SSH (built-in libssh or the user's ssh), or by the
/// job's own launcher (one agent per node, reached over TCP: sys/agents).
enum class TransportKind { ssh, launcher };
[[nodiscard]] std::string_view to_string(TransportKind kind);

/// How relays are reached and what they write.
struct BroadcastSpec {
  TransportKind transport = TransportKind::ssh;
  std::string destination;               ///< the same path on every node
  std::string self_exe;                  ///< ezpz's path here, tried first on the nodes (a shared filesystem)
  std::vector<std::string> ssh_command;  ///< e.g. {"ssh", "-o", "BatchMode=yes"}; empty: built-in libssh
  bool accept_new_host_keys = false;     ///< built-in transport: add unknown host keys to known_hosts
  std::string user;                      ///< built-in transport: login name when ~/.ssh/config has none
  std::string exe_digest;                ///< SHA-256 (hex) of ezpz; empty: trust self_exe on the nodes
  unsigned long long exe_size = 0;       ///< its size in bytes (what a node without it reads)
  std::string this_host;                 ///< the node running this (names it in `reattached_to`)
  bool reattach = true;                  ///< re-attach a failed relay's children mid-stream (spooling)
  bool force = false;                    ///< replace a destination yeet did not make (core::check_replaceable)
  double stall_timeout_s = 30;           ///< a child that takes no data for this long (or, after the stream, says
                                         ///< nothing for this long) is dropped; mid-stream its nodes are re-attached
  int stream_level = 0;                  ///< zstd level of the stream; 0: adaptive (see AdaptiveZstd)
  double parent_silence_s = 0;           ///< a relay: give up when its parent sends nothing for this long
                                         ///< (its node or link is gone: no end of file comes); 0: no limit
  bool encrypt = true;       ///< sealed TCP streams (both transports): encrypt (every frame is authenticated anyway)
  std::string log_level;     ///< what the relays log on stderr (log::level_name: the head's -v); empty: warnings
  int sealed_stdin_fd = -1;  ///< a relay: stdin is a sealed connection, its receiving keys on this descriptor
  // The head only (the launcher transport; relays reach the agents it started):
  std::vector<std::string> agent_step;  ///< the launcher command that starts one agent per node (core/agents)
  std::string agent_head;               ///< the name or address agents dial to reach this node
  double agent_timeout_s = 60;          ///< every agent registers within this, or its node fails
};

/// Relays one level down wait 2 s less for a stalled child, down to this.
inline constexpr double kMinStallTimeoutS = 6;

/// First lines a remote ezpz start writes on stdout: the relay is running and reads the stream
/// ("EZPZ-READY"), or the node lacks this binary and reads `<size>` bytes of it first
/// ("EZPZ-SHIP <size>").
inline constexpr std::string_view kReadyLine = "EZPZ-READY";
inline constexpr std::string_view kShipLine = "EZPZ-SHIP";
/// A relay's sign of life (every second from the end of its stream to its last result line):
/// after the stream a parent drops a child that says nothing for its stall timeout
/// (sys/heartbeat.hpp).
inline constexpr std::string_view kAliveLine = "EZPZ-ALIVE";

/// Whether ezpz is shipped to a node that lacks it (where the transport ships: the SSH one,
/// remote_command), or must be there already.
enum class Ship { never, when_missing };

/// The shell command that runs `ezpz args...` on a node: `self_exe` when it is there with the
/// same SHA-256, else a copy cached in $TMPDIR (or /tmp)/.ezpz-<uid>-<digest>/ezpz, else (with
/// Ship::when_missing) it asks for the binary on stdin (kShipLine), checks its digest and runs it.
/// Every path and argument reaches the remote shell as a quoted word (sh -c SCRIPT _ ARGS).
[[nodiscard]] std::string remote_command(const BroadcastSpec& spec, const std::vector<std::string>& args, Ship ship);

/// `__yeet-relay` arguments for a relay on `node` (its children, how to reach them, the binary).
[[nodiscard]] std::vector<std::string> relay_args(const BroadcastSpec& spec, const RelayNode& node);
/// `__yeet-send` arguments: stream this node's copy of the destination to the relays of `tree`.
[[nodiscard]] std::vector<std::string> send_args(const BroadcastSpec& spec, const std::vector<RelayNode>& tree);

/// What the head sent: stream bytes (compressed) and the zstd levels it used.
struct StreamStats {
  unsigned long long bytes = 0;
  int level_min = 0;
  int level_max = 0;
  int level_final = 0;
};

/// How a node's copy ended.
enum class NodeOutcome {
  ok,               ///< it has the copy
  repaired,         ///< it has the copy, sent again after the pass (`repaired_from`)
  failed,           ///< it does not (`error` says why)
  needs_full_copy,  ///< the delta could not update its copy (it missed the last yeet, or was edited by hand)
  orphaned,         ///< its relay failed before it reported
};
[[nodiscard]] std::string_view to_string(NodeOutcome o);
[[nodiscard]] std::optional<NodeOutcome> parse_node_outcome(std::string_view text);

/// One node's outcome, as a relay reports it upstream (one JSON line per node).
struct NodeResult {
  std::string host;
  NodeOutcome outcome = NodeOutcome::failed;
  [[nodiscard]] bool ok() const { return outcome == NodeOutcome::ok || outcome == NodeOutcome::repaired; }
  double seconds = 0;
  unsigned long long bytes = 0;  ///< stream bytes received
  bool digest_ok = false;
  std::string error;          ///< what went wrong (failed, needs_full_copy, orphaned)
  std::string repaired_from;  ///< set by the head when a peer (or the head) re-sent it after the pass
  std::string reattached_to;  ///< the node that fed it after its relay's parent failed mid-stream
};
[[nodiscard]] std::string encode_result(const NodeResult& r);
[[nodiscard]] std::optional<NodeResult> decode_result(std::string_view line);

/// ezpz's thresholds: --min-success-nodes N or --min-success-fraction F (of all targets,
/// the local node included). With neither, every node must succeed.
struct SuccessRule {
  std::optional<int> min_nodes;
  std::optional<double> min_fraction;
};
[[nodiscard]] Expected<void> check_success_rule(const SuccessRule& rule);
[[nodiscard]] bool success(const SuccessRule& rule, int succeeded, int total);

}  // namespace ezpz::core
