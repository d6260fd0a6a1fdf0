// yeet to the other nodes, planned as data: which nodes, through which relay tree and transport,
// how many must succeed; after the pass, which nodes are repaired from whom; and the tally.
// Pure: the broadcast itself is a port (core::Broadcaster).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/base/expected.hpp"
#include "core/job/hostlist.hpp"
#include "core/launch/job_stop.hpp"
#include "core/yeet/broadcast_spec.hpp"
#include "core/yeet/outcome.hpp"
#include "core/yeet/relay_tree.hpp"

namespace ezpz::core {

enum class Strategy {
  tree,    ///< stream through relays (default)
  greedy,  ///< store and forward, 8 pushes per source (--strategy greedy)
};
[[nodiscard]] std::string_view to_string(Strategy s);

struct BroadcastPlan {
  HostList targets;  ///< the other nodes (the job's, less this one)
  std::vector<RelayNode> tree;
  int fanout = 2;
  Strategy strategy = Strategy::tree;
  SuccessRule rule;                ///< --min-success-nodes / --min-success-fraction
  int total_nodes = 1;             ///< targets and this node
  BroadcastSpec spec;              ///< what relays are told: destination, transport, binary, timeouts
  std::string transport_why;       ///< why this transport (core::choose_transport)
  std::vector<NodeDown> left_out;  ///< nodes of the job its scheduler has down, not reached (counted in total_nodes)
  /// "built-in libssh", "ssh command: ..." or "launcher: srun --overlap ... (agents over TCP, encrypted)".
  [[nodiscard]] std::string transport() const;
};

/// Check the thresholds and every target's name, and lay out the relay tree.
[[nodiscard]] Expected<BroadcastPlan> plan_broadcast(HostList targets, int fanout, Strategy strategy,
                                                     const SuccessRule& rule, BroadcastSpec spec);

/// After the pass: nodes cut off by a failed relay, and nodes whose copy the delta could not
/// update, get everything from a node that has it (the head when none does), so the head's
/// uplink is not the only source. Empty for --strategy greedy, and once interrupted.
struct RepairPlan {
  HostList hosts;
  std::string from;        ///< the node that sends (a peer, or the head)
  bool from_peer = false;  ///< false: the head streams it again itself
  std::vector<RelayNode> tree;
  std::vector<std::pair<std::string, std::string>> full_copies;  ///< (host, why the delta could not apply)
  [[nodiscard]] bool empty() const { return hosts.empty(); }
};
[[nodiscard]] RepairPlan plan_repair(const std::vector<NodeResult>& results, const BroadcastPlan& plan,
                                     const std::string& head, bool interrupted);

/// Put the repair's results in place of the first pass's (outcome `repaired` for those that
/// now have the copy; `repaired_from` names the sender either way).
void apply_repair(std::vector<NodeResult>& results, const std::vector<NodeResult>& again, const RepairPlan& repair);

/// How many nodes have the copy (this one included), which do not, and whether that is enough.
struct Tally {
  int succeeded = 1;
  std::vector<std::string> failed;
  bool threshold_met = true;
};
[[nodiscard]] Tally tally(const std::vector<NodeResult>& remote, const BroadcastPlan& plan);

}  // namespace ezpz::core
