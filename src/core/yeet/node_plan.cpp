#include "core/yeet/node_plan.hpp"

#include "core/base/shell.hpp"
#include "core/yeet/manifest.hpp"

namespace ezpz::core {

std::string_view to_string(Strategy s) {
  return s == Strategy::greedy ? "greedy" : "tree";
}

std::string BroadcastPlan::transport() const {
  if (spec.reach.transport == TransportKind::launcher) {
    return "launcher: " + (spec.reach.agent_step.empty() ? std::string("?") : spec.reach.agent_step.front()) +
           " starts an agent per node; relays over TCP, " +
           (spec.reach.encrypt ? "encrypted" : "authenticated, not encrypted");
  }
  return spec.reach.ssh_command.empty() ? "built-in libssh" : "ssh command: " + shell_join(spec.reach.ssh_command);
}

Expected<BroadcastPlan> plan_broadcast(HostList targets, int fanout, Strategy strategy, const SuccessRule& rule,
                                       BroadcastSpec spec) {
  EZPZ_TRY(check_success_rule(rule));
  for (const auto& target : targets) {
    EZPZ_TRY(check_remote_host(target));
  }
  BroadcastPlan plan;
  plan.tree = relay_tree(targets, fanout);
  plan.total_nodes = static_cast<int>(targets.size()) + 1;
  plan.targets = std::move(targets);
  plan.fanout = fanout;
  plan.strategy = strategy;
  plan.rule = rule;
  plan.spec = std::move(spec);
  return plan;
}

RepairPlan plan_repair(const std::vector<NodeResult>& results, const BroadcastPlan& plan, const std::string& head,
                       bool interrupted) {
  RepairPlan repair;
  for (const auto& r : results) {
    if (r.outcome == NodeOutcome::needs_full_copy) {
      std::string why = r.error;
      if (why.rfind(kNeedsFullCopy, 0) == 0) {
        why.erase(0, kNeedsFullCopy.size());  // the message names it; the list says why
      }
      repair.full_copies.emplace_back(r.host, why);
    }
    if (r.outcome == NodeOutcome::needs_full_copy || r.outcome == NodeOutcome::orphaned) {
      repair.hosts.push_back(r.host);
    } else if (r.ok() && repair.from.empty()) {
      repair.from = r.host;
    }
  }
  if (interrupted || plan.strategy != Strategy::tree) {
    repair.hosts.clear();
  }
  repair.from_peer = !repair.from.empty();
  if (!repair.from_peer) {
    repair.from = head;
  }
  repair.tree = relay_tree(repair.hosts, plan.fanout);
  return repair;
}

void apply_repair(std::vector<NodeResult>& results, const std::vector<NodeResult>& again, const RepairPlan& repair) {
  for (const auto& a : again) {
    for (auto& r : results) {
      if (r.host == a.host) {
        r = a;
        r.repaired_from = repair.from;
        if (r.ok()) {
          r.outcome = NodeOutcome::repaired;
        }
      }
    }
  }
}

Tally tally(const std::vector<NodeResult>& remote, const BroadcastPlan& plan) {
  Tally t;
  for (const auto& r : remote) {
    t.succeeded += r.ok() ? 1 : 0;
    if (!r.ok()) {
      t.failed.push_back(r.host);
    }
  }
  t.threshold_met = success(plan.rule, t.succeeded, plan.total_nodes);
  return t;
}

}  // namespace ezpz::core
