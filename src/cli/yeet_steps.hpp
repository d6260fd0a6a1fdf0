// The steps of `ezpz yeet` after planning (cli/yeet.cpp runs them in order): build the copy on
// this node (yeet_local.cpp), then send it to the other nodes and repair (yeet_nodes.cpp).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "cli/command.hpp"
#include "cli/yeet_report.hpp"
#include "core/yeet/install.hpp"
#include "core/yeet/manifest.hpp"
#include "core/yeet/transfer.hpp"

namespace ezpz::cli {

/// The other nodes, reached while this node builds its copy (the launcher transport's agents
/// up, the relays starting): let go when the run ends, relays no broadcast took stopped.
class NodesReached {
 public:
  NodesReached() = default;
  NodesReached(NodesReached&& o) noexcept : broadcaster_(std::exchange(o.broadcaster_, nullptr)) {}
  NodesReached& operator=(NodesReached&&) = delete;
  NodesReached(const NodesReached&) = delete;
  NodesReached& operator=(const NodesReached&) = delete;
  ~NodesReached() { let_go(); }
  /// Reached through `b` from now on.
  void hold(core::Broadcaster& b) { broadcaster_ = &b; }
  [[nodiscard]] bool held() const { return broadcaster_ != nullptr; }
  void let_go() {
    if (broadcaster_ != nullptr) {
      broadcaster_->abandon_relays();
      broadcaster_->close_nodes();
      broadcaster_ = nullptr;
    }
  }

 private:
  core::Broadcaster* broadcaster_ = nullptr;
};

/// One run of yeet: the plan, what this node already holds, and the report as it fills in.
struct YeetRun {
  Context& ctx;
  YeetReport report;
  std::string source_real;                        ///< the source with symlinks resolved
  unsigned long long max_bytes = 0;               ///< --max-bytes (tarball sources)
  std::optional<core::HeldManifest> base;         ///< this node's last copy, when other nodes get a delta
  std::string bundle;                             ///< the delta bundle beside the destination, once made
  std::chrono::steady_clock::time_point started;  ///< when the work began (the report's seconds)
  NodesReached reached;                           ///< the other nodes, once start_nodes reached them
  core::InstallTarget target;                     ///< where and as whom this node installs (as every relay)
  [[nodiscard]] const core::YeetPlan& plan() const { return report.plan; }
};

/// Build the new tree beside the destination, patch a moved env for its final path, write its
/// manifest and the delta for the other nodes, and put it in place. nullopt when it is in place;
/// else the exit code, everything made removed and the destination as it was.
[[nodiscard]] std::optional<int> install_here(YeetRun& run);

/// Reach the other nodes (the launcher transport's agents) and start the relay tree's relays, to
/// wait for the stream while this node builds its copy. Once; send_to_nodes does it otherwise.
void start_nodes(YeetRun& run);
/// Stream the copy through the relay tree (or --strategy greedy), then repair orphaned nodes and
/// nodes that need a full copy from a peer that has it. Results land in run.report.remote.
void send_to_nodes(YeetRun& run);

/// Removals that failed (what is left must be removed by hand): a warning line each.
void show_leftovers(Context& ctx);

}  // namespace ezpz::cli
