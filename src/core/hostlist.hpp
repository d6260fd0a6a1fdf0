// Host lists: Slurm hostlist expressions and hostfiles.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"

namespace ezpz::core {

using HostList = std::vector<std::string>;

/// Expand a Slurm hostlist expression: "nid[001-003,007]", "rack[1-2]-n[01-02]",
/// "a,b[1-2],c", "nid[01-02]-hsn". Zero padding follows the lower bound's width.
/// Malformed input ("nid[1-", "a[3-1]", "a[]") is a usage error naming the problem.
[[nodiscard]] Expected<HostList> expand_nodelist(std::string_view expr);

/// Hosts of a hostfile, one per line. '#' starts a comment; only the first word
/// counts ("host slots=4"); an MPICH ":N" count is dropped. Duplicates removed, order kept.
[[nodiscard]] HostList parse_hostfile(std::string_view text);

/// Remove repeated hosts, keeping the first occurrence.
[[nodiscard]] HostList dedupe_hosts(const HostList& hosts);

/// Whether `host` can be handed to ssh as a host name: not empty, no leading '-' (ssh would read
/// it as an option, e.g. -oProxyCommand=...), no whitespace or control characters. The usage
/// error names the host.
[[nodiscard]] Expected<void> check_remote_host(std::string_view host);

/// "x4102c0s0b0n0.hostmgmt.cm.aurora" -> "x4102c0s0b0n0"
[[nodiscard]] std::string short_hostname(std::string_view host);

}  // namespace ezpz::core
