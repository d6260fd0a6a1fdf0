// Reaching the job's other nodes, one concept for every command that does: the options a user
// gives (yeet, doctor --nodes, kill --all-nodes, launch's failover probes) and the plan they give,
// whole: the targets, the transport and why, and the spec every remote ezpz starts with.
#pragma once

#include <string>

#include "core/base/env.hpp"
#include "core/base/expected.hpp"
#include "core/job/cluster.hpp"
#include "core/ports/probe.hpp"
#include "core/reach/agents.hpp"
#include "core/reach/spec.hpp"

namespace ezpz::core {

/// How the user asked to reach the nodes (the flags yeet, doctor, kill and launch share).
struct ReachOptions {
  std::string transport;              ///< --transport: auto, launcher or ssh ("" not given)
  std::string ssh_command;            ///< --ssh-command: an ssh client instead of the built-in libssh
  bool accept_new_host_keys = false;  ///< --accept-new-host-keys
  bool no_hsn = false;                ///< --no-hsn: the hostfile's names, never <host>-hsn0
  std::string hostfile;               ///< --hostfile ("" the job's own)
  /// yeet: the nodes the job's scheduler has down are asked for, and left out where the transport
  /// names its nodes (NodeReach::down), not waited for.
  bool leave_out_down = false;
};

/// The reach, planned whole: where (targets), how (transport, agents' step) and the spec every
/// remote start takes (transport, ssh client, login, this binary and its digest).
struct ReachPlan {
  NodeReach reach;
  ReachSpec spec;    ///< how every remote ezpz starts
  TransportAsk ask;  ///< what asked for the transport
};

/// The job's other nodes as the options reach them (plan_reach, or reach_from `cluster` when one
/// is already discovered), and the spec for them. The digest of this binary is read here, once, when there is a target.
[[nodiscard]] Expected<ReachPlan> plan_reach_spec(const ReachOptions& options, const Env& env, const SystemProbe& probe,
                                                  const ClusterInfo* cluster = nullptr);

/// "the job's launcher (agents over TCP)", "ssh (built-in libssh)", "ssh (CLIENT)".
[[nodiscard]] std::string reach_transport_text(const ReachPlan& reach);

}  // namespace ezpz::core
