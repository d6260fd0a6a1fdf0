#include "core/job/topology.hpp"

#include <string>

namespace ezpz::core {
namespace {

std::string hosts_word(int n) {
  return std::to_string(n) + (n == 1 ? " host" : " hosts");
}

Error too_many_hosts(int nhosts, int available, const std::string& why) {
  return usage_error(why + " needs " + hosts_word(nhosts) + " but the allocation has " + hosts_word(available) +
                     ": ask for fewer processes or a bigger allocation");
}

}  // namespace

Expected<Topology> resolve_topology(const TopologyRequest& request, int hosts_available, int gpus_per_node) {
  const int available = hosts_available > 0 ? hosts_available : 1;
  const int per_node = gpus_per_node > 0 ? gpus_per_node : 1;
  for (auto [value, flag] : {std::pair{request.nprocs, "-n"}, {request.ppn, "--ppn"}, {request.nhosts, "--nhosts"}}) {
    if (value && *value <= 0) {
      return usage_error(std::string(flag) + " must be a positive number, got " + std::to_string(*value));
    }
  }
  Topology t;
  const auto& [n, ppn, nh] = request;
  if (nh && *nh > available) {
    return usage_error("--nhosts " + std::to_string(*nh) + " is more than the " + hosts_word(available) +
                       " in the allocation");
  }

  if (n && ppn && nh) {
    if (*n != *ppn * *nh) {
      return usage_error("-n " + std::to_string(*n) + " disagrees with --nhosts " + std::to_string(*nh) + " x --ppn " +
                         std::to_string(*ppn) + " = " + std::to_string(*ppn * *nh) +
                         ": drop one of the three or make them agree");
    }
    t = {*n, *ppn, *nh};
  } else if (n && ppn) {
    if (*n % *ppn != 0) {
      return usage_error("-n " + std::to_string(*n) + " is not a multiple of --ppn " + std::to_string(*ppn) +
                         ": every host runs the same number of processes");
    }
    int hosts = *n / *ppn;
    if (hosts > available) {
      return too_many_hosts(hosts, available, "-n " + std::to_string(*n) + " with --ppn " + std::to_string(*ppn));
    }
    t = {*n, *ppn, hosts};
  } else if (n) {
    int hosts = nh ? *nh : available;
    if (*n < hosts && !nh) {
      hosts = *n;  // fewer processes than hosts: one per host on the first n hosts
    }
    if (*n % hosts != 0) {
      return usage_error("-n " + std::to_string(*n) + " does not divide evenly over " + hosts_word(hosts) +
                         ": use a multiple of " + std::to_string(hosts) + " or set --nhosts/--ppn");
    }
    t = {*n, *n / hosts, hosts};
  } else {
    int hosts = nh ? *nh : available;
    int p = ppn ? *ppn : per_node;
    t = {p * hosts, p, hosts};
  }
  return t;
}

}  // namespace ezpz::core
