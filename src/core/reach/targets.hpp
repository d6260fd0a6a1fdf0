// The job's other nodes as ezpz reaches them: this node left out, each named once.
#pragma once

#include <string>

#include "core/job/hostlist.hpp"
#include "core/ports/probe.hpp"

namespace ezpz::core {

/// Whether a node is named <short>-hsn0 (its high-speed network) where that name resolves.
enum class HsnNames { prefer, never };
/// Whether the job's scheduler is asked which nodes are down, those left out (yeet), or not.
enum class DownNodes { keep, leave_out };

/// Remote targets from the job's hosts: deduplicated by short name (order kept), the
/// current node left out (it gets the local copy), each replaced by <short>-hsn0 when that
/// resolves and `hsn` prefers it.
[[nodiscard]] HostList reach_targets(const HostList& hosts, const std::string& this_host, HsnNames hsn,
                                     const HostProbe& probe);

}  // namespace ezpz::core
