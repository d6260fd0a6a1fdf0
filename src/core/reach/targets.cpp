#include "core/reach/targets.hpp"

#include <unordered_set>

#include "core/job/hostlist.hpp"

namespace ezpz::core {

HostList reach_targets(const HostList& hosts, const std::string& this_host, HsnNames hsn, const HostProbe& probe) {
  bool use_hsn = hsn == HsnNames::prefer;
  HostList out;
  std::unordered_set<std::string> seen;
  const auto me = short_hostname(this_host);
  for (const auto& h : hosts) {
    const auto s = short_hostname(h);
    if (s == me || s == "localhost" || !seen.insert(s).second) {
      continue;
    }
    // A look-up cut short means DNS does not answer: the other names are not tried (each
    // would cost the same wait), the hostfile's are used.
    const auto fast = use_hsn ? probe.look_up(s + "-hsn0", kLookupTimeoutS) : Lookup{};
    use_hsn = use_hsn && !fast.timed_out;
    out.push_back(fast.resolves ? s + "-hsn0" : h);
  }
  return out;
}

}  // namespace ezpz::core
