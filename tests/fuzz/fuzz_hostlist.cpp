// Hostlist expansion (Slurm nodelist syntax) and hostfile parsing. The first byte picks which;
// the rest is the text. Properties: bounded output, host names only (RFC 1123), no duplicates, one-line errors.
#include <set>

#include "core/job/hostlist.hpp"
#include "fuzz_common.hpp"

using namespace ezpz;

namespace {

void check_hosts(const core::HostList& hosts) {
  std::set<std::string> seen;
  for (const auto& h : hosts) {
    EZPZ_FUZZ_CHECK(seen.insert(h).second);  // deduplicated
    EZPZ_FUZZ_CHECK(core::short_hostname(h).size() <= h.size());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  const auto text = fuzz::as_text(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    auto hosts = core::expand_nodelist(text);
    if (hosts) {
      EZPZ_FUZZ_CHECK(hosts->size() <= 1'000'000);
      for (const auto& h : *hosts) {
        EZPZ_FUZZ_CHECK(!core::host_name_problem(h));
      }
      check_hosts(*hosts);
    } else {
      EZPZ_FUZZ_CHECK(!hosts.error().message.empty());
    }
  } else {
    auto hosts = core::parse_hostfile(text, "fuzz");
    if (!hosts) {
      EZPZ_FUZZ_CHECK(hosts.error().code == ExitCode::usage);
      EZPZ_FUZZ_CHECK(hosts.error().message.find('\n') == std::string::npos);  // one line
      return 0;
    }
    for (const auto& h : *hosts) {
      EZPZ_FUZZ_CHECK(!core::host_name_problem(h));
    }
    check_hosts(*hosts);
  }
  return 0;
}
