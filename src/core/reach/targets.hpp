// The job's other nodes as ezpz reaches them: this node left out, each named once.
#pragma once

#include <string>

#include "core/job/hostlist.hpp"
#include "core/ports/probe.hpp"

namespace ezpz::core {

/// Remote targets from the job's hosts: deduplicated by short name (order kept), the
/// current node left out (it gets the local copy), each replaced by <short>-hsn0 when that
/// resolves and `use_hsn` is set.
[[nodiscard]] HostList reach_targets(const HostList& hosts, const std::string& this_host, bool use_hsn,
                                     const HostProbe& probe);

}  // namespace ezpz::core
