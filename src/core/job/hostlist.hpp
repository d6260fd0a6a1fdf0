// Host lists: Slurm hostlist expressions and hostfiles.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/expected.hpp"

namespace ezpz::core {

using HostList = std::vector<std::string>;

/// Expand a Slurm hostlist expression: "nid[001-003,007]", "rack[1-2]-n[01-02]",
/// "a,b[1-2],c", "nid[01-02]-hsn". Zero padding follows the lower bound's width.
/// Malformed input ("nid[1-", "a[3-1]", "a[]") is a usage error naming the problem.
[[nodiscard]] Expected<HostList> expand_nodelist(std::string_view expr);

/// Hosts of a hostfile, one per line: a host name (is_host_name), optionally with MPICH's ":N"
/// count, then only Open MPI's "slots=N" / "max_slots=N" words; '#' starts a comment; blank lines
/// and CRLF line ends are fine. Duplicates removed, order kept. Any other line is a usage error
/// naming `path` and the line, showing the text safely (printable) and the fix.
[[nodiscard]] Expected<HostList> parse_hostfile(std::string_view text, std::string_view path);

/// Whether `name` is a host name (RFC 1123): letters, digits, '-' and '.'; labels of 1 to 63
/// characters, none starting with '-'; at most 253 characters (one trailing '.' allowed).
/// IPv4 addresses fit. Otherwise why not, for people ("holds '['").
[[nodiscard]] std::optional<std::string> host_name_problem(std::string_view name);

/// Remove repeated hosts, keeping the first occurrence.
[[nodiscard]] HostList dedupe_hosts(const HostList& hosts);

/// Whether `host` can be handed to ssh: a host name (host_name_problem), so never one with a
/// leading '-' (ssh would read it as an option, e.g. -oProxyCommand=...), whitespace, control
/// characters or shell syntax. The usage error names the host (printable).
[[nodiscard]] Expected<void> check_remote_host(std::string_view host);

/// "x4102c0s0b0n0.hostmgmt.cm.aurora" -> "x4102c0s0b0n0"
[[nodiscard]] std::string short_hostname(std::string_view host);

}  // namespace ezpz::core
