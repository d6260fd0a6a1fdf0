// yeet to every node: the head streams a packed tree through a tree of relays (this same
// binary, started over ssh as `ezpz __yeet-relay`); each relay extracts what it receives
// while forwarding it to its children, checks the stream's SHA-256, and commits atomically.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "core/reach/transport.hpp"
#include "core/yeet/broadcast_spec.hpp"
#include "core/yeet/install.hpp"
#include "core/yeet/outcome.hpp"
#include "core/yeet/relay_tree.hpp"
#include "core/yeet/stream_wire.hpp"
#include "core/yeet/transfer.hpp"
#include "sys/os/stop_signals.hpp"

namespace ezpz::sys {

/// Head: pack `root` as `name/...` once and stream it to the relays of `tree`.
/// One result per target host, in tree order (failures included: no report means failed).
std::vector<core::NodeResult> broadcast_tree(core::Transport& transport, const std::string& root,
                                             const std::string& name, const std::vector<core::RelayNode>& tree,
                                             const core::BroadcastSpec& options, const core::ProgressFn& progress,
                                             const core::ResultFn& on_result, const std::atomic<bool>& stop,
                                             core::StreamStats* stats = nullptr);

class Fanout;
/// The head's two halves of broadcast_tree: start the relays of `tree` (and send the stream's
/// first unit), then pack `root` and stream it to them.
void start_stream(Fanout& fan, const std::vector<core::RelayNode>& tree);
std::vector<core::NodeResult> stream_tree(Fanout& fan, const std::string& root, const std::string& name,
                                          const core::BroadcastSpec& options, const core::ProgressFn& progress,
                                          const core::ResultFn& on_result, const std::atomic<bool>& stop,
                                          core::StreamStats* stats);

/// Repair: `peer`, a node that has the copy, streams it (`ezpz __yeet-send` there) to the
/// relays of `tree`. One result per host of `tree`.
std::vector<core::NodeResult> send_from_peer(core::Transport& transport, const std::string& peer,
                                             const std::vector<core::RelayNode>& tree,
                                             const core::BroadcastSpec& options, const core::ResultFn& on_result);

/// Relay: the stream on stdin -> the work directory `install` opens and to `children`, then
/// placed by `install`; prints one JSON result line per host (itself, then its subtree) on
/// `out`. Returns 0 when this node succeeded.
int run_relay(core::Transport& transport, const std::string& this_host, const std::vector<core::RelayNode>& children,
              const core::BroadcastSpec& options, core::NodeInstall& install, std::ostream& out,
              const std::atomic<bool>& stop);

/// `ezpz __yeet-send`: stream this node's copy at `root` to the relays of `tree`, printing each
/// host's result line on `out` as it arrives (and a heartbeat meanwhile). 0 when all succeeded.
int serve_copy(core::Transport& transport, const std::string& root, const std::vector<core::RelayNode>& tree,
               const core::BroadcastSpec& options, std::ostream& out, const std::atomic<bool>& stop);

}  // namespace ezpz::sys

namespace ezpz::sys {

/// ezpz's algorithm, for comparison (--strategy greedy): store and forward, each push a whole
/// stream from a node that has the copy to one that does not, at most `per_source` pushes per
/// source, least-loaded source first; a node that finishes becomes a source. Pushes from this
/// node run `ezpz __yeet-send` locally; from other nodes over ssh.
std::vector<core::NodeResult> greedy_broadcast(core::Transport& transport, const core::HostList& targets,
                                               const core::BroadcastSpec& options, int per_source,
                                               const std::atomic<bool>& stop);

}  // namespace ezpz::sys

namespace ezpz::sys {

/// core::Broadcaster on this machine: the functions above, stopped by `stop`'s signals.
class PosixBroadcaster final : public core::Broadcaster {
 public:
  PosixBroadcaster(core::Transport& transport, StopSignals& stop);
  ~PosixBroadcaster() override;
  PosixBroadcaster(const PosixBroadcaster&) = delete;
  PosixBroadcaster& operator=(const PosixBroadcaster&) = delete;
  void start_nodes(const core::HostList& hosts, const std::vector<core::RelayNode>& tree,
                   const core::BroadcastSpec& spec) override;
  [[nodiscard]] std::map<std::string, std::string> nodes_opened() override;
  [[nodiscard]] core::StepTimes start_steps() override;
  void abandon_relays() override;
  void announce_delta(const std::string& base_digest) override;
  [[nodiscard]] std::map<std::string, std::string> open_nodes(const core::HostList& hosts,
                                                              const core::BroadcastSpec& spec) override {
    stop_.arm();
    return transport_.open_nodes(hosts, spec.reach, &stop_.flag(), nullptr);
  }
  void close_nodes() override { transport_.close_nodes(); }
  [[nodiscard]] std::vector<core::NodeResult> broadcast(const std::string& root, const std::string& name,
                                                        const std::vector<core::RelayNode>& tree,
                                                        const core::BroadcastSpec& spec,
                                                        const core::ProgressFn& progress,
                                                        const core::ResultFn& on_result,
                                                        core::StreamStats* stats) override;
  [[nodiscard]] std::vector<core::NodeResult> send_from_peer(const std::string& peer,
                                                             const std::vector<core::RelayNode>& tree,
                                                             const core::BroadcastSpec& spec,
                                                             const core::ResultFn& on_result) override {
    return sys::send_from_peer(transport_, peer, tree, spec, on_result);
  }
  [[nodiscard]] std::vector<core::NodeResult> greedy_broadcast(const core::HostList& targets,
                                                               const core::BroadcastSpec& spec,
                                                               int per_source) override {
    stop_.arm();
    return sys::greedy_broadcast(transport_, targets, spec, per_source, stop_.flag());
  }
  int relay(const std::string& this_host, const std::vector<core::RelayNode>& children, const core::BroadcastSpec& spec,
            core::NodeInstall& install, std::ostream& out) override {
    stop_.arm();
    return run_relay(transport_, this_host, children, spec, install, out, stop_.flag());
  }
  int serve_copy(const std::string& root, const std::vector<core::RelayNode>& tree, const core::BroadcastSpec& spec,
                 std::ostream& out) override {
    stop_.arm();
    return sys::serve_copy(transport_, root, tree, spec, out, stop_.flag());
  }

 private:
  /// The relays start_nodes started for `tree`, once started (nullptr: none, or another tree).
  std::unique_ptr<Fanout> take_started(const std::vector<core::RelayNode>& tree);
  /// Wait for start_nodes' starter to be done, if one runs.
  void await_starter() {
    if (starting_.joinable()) {
      starting_.join();
    }
  }

  core::Transport& transport_;
  StopSignals& stop_;
  std::unique_ptr<Fanout> started_;          ///< start_nodes' relays, until a broadcast takes them
  std::string started_tree_;                 ///< their tree (core::encode_tree)
  bool relays_started_ = false;              ///< the starter started them (it did not give up first)
  core::StepTimes start_steps_;              ///< the starter's: reach_s (nodes opened), relays_s (ready)
  std::atomic<bool> opening_cancel_{false};  ///< the opening gives up (this node's copy failed)
  std::thread starting_;                     ///< opens the nodes and starts the relays while this node works
  std::mutex announcing_;                    ///< guards the two below (this thread and the starter)
  std::string announce_;                     ///< the frame announce_delta asked for, until sent
  bool announce_ready_ = false;              ///< the relays are started: announce_delta sends it itself
};

}  // namespace ezpz::sys
