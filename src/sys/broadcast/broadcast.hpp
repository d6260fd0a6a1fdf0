// yeet to every node: the head streams a packed tree through a tree of relays (this same
// binary, started over ssh as `ezpz __yeet-relay`); each relay extracts what it receives
// while forwarding it to its children, checks the stream's SHA-256, and commits atomically.
#pragma once

#include <atomic>
#include <ostream>
#include <string>
#include <vector>

#include "core/broadcast.hpp"
#include "core/transfer.hpp"

namespace ezpz::sys {

using BroadcastOptions = core::BroadcastSpec;

/// Head: pack `root` as `name/...` once and stream it to the relays of `tree`.
/// One result per target host, in tree order (failures included: no report means failed).
std::vector<core::NodeResult> broadcast_tree(const std::string& root, const std::string& name,
                                             const std::vector<core::RelayNode>& tree, const BroadcastOptions& options,
                                             const core::ProgressFn& progress, const core::ResultFn& on_result,
                                             const std::atomic<bool>& stop, core::StreamStats* stats = nullptr);

/// Repair: `peer`, a node that has the copy, streams it (`ezpz __yeet-send` there) to the
/// relays of `tree`. One result per host of `tree`.
std::vector<core::NodeResult> send_from_peer(const std::string& peer, const std::vector<core::RelayNode>& tree,
                                             const BroadcastOptions& options, const core::ResultFn& on_result);

/// Relay: the stream on stdin -> a staging directory beside the destination and to
/// `children`; prints one JSON result line per host (itself, then its subtree) on `out`.
/// Returns 0 when this node succeeded.
int run_relay(const std::string& this_host, const std::vector<core::RelayNode>& children,
              const BroadcastOptions& options, std::ostream& out, const std::atomic<bool>& stop);

/// `ezpz __yeet-send`: stream this node's copy at `root` to the relays of `tree`, printing each
/// host's result line on `out` as it arrives (and a heartbeat meanwhile). 0 when all succeeded.
int serve_copy(const std::string& root, const std::vector<core::RelayNode>& tree, const BroadcastOptions& options,
               std::ostream& out, const std::atomic<bool>& stop);

}  // namespace ezpz::sys

namespace ezpz::sys {

/// ezpz's algorithm, for comparison (--strategy greedy): store and forward, each push a whole
/// stream from a node that has the copy to one that does not, at most `per_source` pushes per
/// source, least-loaded source first; a node that finishes becomes a source. Pushes from this
/// node run `ezpz __yeet-send` locally; from other nodes over ssh.
std::vector<core::NodeResult> greedy_broadcast(const core::HostList& targets, const BroadcastOptions& options,
                                               int per_source, const std::atomic<bool>& stop);

}  // namespace ezpz::sys
