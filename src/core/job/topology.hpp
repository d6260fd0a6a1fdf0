// How many processes, on how many hosts, how many per host.
#pragma once

#include <optional>

#include "core/base/expected.hpp"

namespace ezpz::core {

struct TopologyRequest {
  std::optional<int> nprocs;  ///< -n / --np
  std::optional<int> ppn;     ///< --ppn
  std::optional<int> nhosts;  ///< --nhosts
};

struct Topology {
  int nprocs = 1;
  int ppn = 1;
  int nhosts = 1;
  bool operator==(const Topology&) const = default;
};

/// Fill in what the user left out and check what they gave:
///  - nothing: every host, gpus_per_node each;
///  - -n alone: spread evenly over every host ("-n 13 does not divide evenly over 2 hosts");
///  - -n and --ppn: n/ppn hosts; --nhosts alone: gpus_per_node each; --ppn alone: every host.
/// More hosts than the allocation has, or numbers that disagree, are usage errors.
[[nodiscard]] Expected<Topology> resolve_topology(const TopologyRequest& request, int hosts_available,
                                                  int gpus_per_node);

}  // namespace ezpz::core
