#include "core/yeet/relay_tree.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "core/base/json_fields.hpp"
#include "core/base/shell.hpp"
#include "core/base/strings.hpp"
#include "core/yeet/relay_args.hpp"

namespace ezpz::core {

HostList yeet_targets(const HostList& hosts, const std::string& this_host, bool use_hsn, const HostProbe& probe) {
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
    const auto hsn = use_hsn ? probe.look_up(s + "-hsn0", kLookupTimeoutS) : Lookup{};
    use_hsn = use_hsn && !hsn.timed_out;
    out.push_back(hsn.resolves ? s + "-hsn0" : h);
  }
  return out;
}

std::vector<RelayNode> relay_tree(const HostList& targets, int fanout) {
  const std::size_t k = static_cast<std::size_t>(std::max(1, fanout));
  std::vector<RelayNode> nodes;
  nodes.reserve(targets.size());
  for (const auto& t : targets) {
    nodes.push_back(RelayNode{t, {}});
  }
  // Node i (0-based) is fed by node (i / k) - 1, or by the head for i < k; build bottom-up.
  for (std::size_t i = nodes.size(); i-- > k;) {
    nodes[i / k - 1].children.insert(nodes[i / k - 1].children.begin(), std::move(nodes[i]));
  }
  nodes.resize(std::min(nodes.size(), k));
  return nodes;
}

HostList subtree_hosts(const RelayNode& node) {
  HostList out{node.host};
  for (const auto& c : node.children) {
    auto sub = subtree_hosts(c);
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

std::string encode_tree(const std::vector<RelayNode>& nodes) {
  std::string out;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (i != 0) {
      out += ',';
    }
    out += nodes[i].host;
    if (!nodes[i].children.empty()) {
      out += "(" + encode_tree(nodes[i].children) + ")";
    }
  }
  return out;
}

namespace {
Expected<std::vector<RelayNode>> parse_list(std::string_view text, std::size_t& pos, int depth) {
  std::vector<RelayNode> nodes;
  if (depth > 64) {
    return usage_error("relay tree nested too deeply");
  }
  while (pos < text.size() && text[pos] != ')') {
    auto end = text.find_first_of("(),", pos);
    RelayNode node{std::string(text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos)),
                   {}};
    if (node.host.empty()) {
      return usage_error("relay tree '" + std::string(text) + "' has an empty host name");
    }
    pos = end == std::string_view::npos ? text.size() : end;
    if (pos < text.size() && text[pos] == '(') {
      ++pos;
      auto children = parse_list(text, pos, depth + 1);
      if (!children) {
        return children;
      }
      if (pos >= text.size() || text[pos] != ')') {
        return usage_error("relay tree '" + std::string(text) + "' has an unclosed '('");
      }
      ++pos;
      node.children = std::move(*children);
    }
    nodes.push_back(std::move(node));
    if (pos < text.size() && text[pos] == ',') {
      ++pos;
    }
  }
  return nodes;
}
}  // namespace

Expected<std::vector<RelayNode>> decode_tree(std::string_view text) {
  std::size_t pos = 0;
  auto nodes = parse_list(text, pos, 0);
  if (nodes && pos != text.size()) {
    return usage_error("relay tree '" + std::string(text) + "' has an unmatched ')'");
  }
  return nodes;
}

std::array<unsigned char, 4> frame_header(std::uint32_t length) {
  return {static_cast<unsigned char>(length >> 24), static_cast<unsigned char>(length >> 16),
          static_cast<unsigned char>(length >> 8), static_cast<unsigned char>(length)};
}

std::uint32_t frame_length(const unsigned char* h) {
  return (std::uint32_t{h[0]} << 24) | (std::uint32_t{h[1]} << 16) | (std::uint32_t{h[2]} << 8) | std::uint32_t{h[3]};
}

namespace {
/// Runs as `sh -c SCRIPT ezpz EXE DIGEST SIZE SHIP ARGS...`: nothing from the caller is pasted
/// into the script, so names with spaces, quotes or `$` stay data.
/// Nothing is run before it is known to be this user's own (docs/security.md): `safe P` holds when
/// P and every directory above it are no symlink, belong to this user or root, and no one else can
/// write them (a directory others can write must be sticky: there they cannot move what is ours).
/// Only then is a candidate asked for its digest (`ezpz __self-digest`: SHA-256 with the CPU's SHA
/// instructions, ~10 ms for 10 MB, where `sha256sum` takes ~100 ms, a tenth of a relay's CPU); an
/// older ezpz answers something else and is not run. `stat -c '%u %f'` gives each path's owner
/// and mode (hex: S_IFLNK 40960, S_IFDIR 16384, S_ISVTX 512, group/other write 18) in one call.
/// A head path with a symlink in it is taken as it resolves (`readlink -f`), so a link another
/// user could swap is never followed at exec. The cache $TMPDIR/.ezpz-<uid>-<digest16> (or
/// /tmp's) is used only when safe; when another user holds its name, a fresh `mktemp -d`
/// directory serves this run and is removed after it. A shipped copy is checked with `sha256sum`
/// before it is ever run.
constexpr std::string_view kStartScript =
    "e=$1; d=$2; n=$3; s=$4; shift 4; u=$(id -u); "
    "safe() { p=$1; set --; while :; do set -- \"$@\" \"$p\"; [ \"$p\" = / ] && break; p=${p%/*}; p=${p:-/}; done; "
    "m=$(stat -c '%u %f' -- \"$@\" 2>/dev/null) || return 1; set -- $m; while [ $# -ge 2 ]; do "
    "{ [ \"$1\" = \"$u\" ] || [ \"$1\" = 0 ]; } && [ $((0x$2 & 0170000)) != 40960 ] && "
    "{ [ $((0x$2 & 18)) = 0 ] || { [ $((0x$2 & 0170000)) = 16384 ] && [ $((0x$2 & 512)) != 0 ]; }; } || return 1; "
    "shift 2; done; }; "
    "ok() { [ -f \"$1\" ] && [ -x \"$1\" ] && safe \"$1\" && "
    "{ [ -z \"$d\" ] || [ \"$(\"$1\" __self-digest 2>/dev/null)\" = \"$d\" ]; }; }; "
    "case $e in /*) if ok \"$e\"; then exec \"$e\" \"$@\"; fi; "
    "r=$(readlink -f -- \"$e\" 2>/dev/null) && [ \"$r\" != \"$e\" ] && ok \"$r\" && exec \"$r\" \"$@\";; esac; "
    "[ -n \"$d\" ] || { echo \"ezpz: $e is missing on $(hostname), or another user could have written it\" >&2; exit "
    "127; }; "
    "t=${TMPDIR:-/tmp}; c=$t/.ezpz-$u-$(printf %.16s \"$d\"); b=$c/ezpz; x=; "
    "if ok \"$b\"; then exec \"$b\" \"$@\"; fi; "
    "[ \"$s\" = 1 ] || { echo \"ezpz: $e is missing on $(hostname) and no copy was shipped there\" >&2; exit 127; }; "
    "t=$(readlink -f -- \"$t\" 2>/dev/null) && safe \"$t\" || t=/tmp; c=$t/${c##*/}; b=$c/ezpz; "
    "mkdir -m 700 \"$c\" 2>/dev/null; "
    "if ! { [ -d \"$c\" ] && safe \"$c\"; }; then x=$c; c=$(mktemp -d \"$t/.ezpz-$u-XXXXXXXXXX\") && safe \"$c\" || "
    "{ echo \"ezpz: cannot make a private directory in $t on $(hostname)\" >&2; exit 126; }; b=$c/ezpz; "
    "echo \"ezpz: $x on $(hostname) is not this user's own: shipping to $c for this run\" >&2; fi; "
    "echo \"EZPZ-SHIP $n\"; w=$b.$$; "
    "if head -c \"$n\" > \"$w\" && chmod 700 \"$w\" && [ \"$(sha256sum < \"$w\" 2>/dev/null)\" = \"$d  -\" ] && "
    "mv -f \"$w\" \"$b\"; then [ -n \"$x\" ] || exec \"$b\" \"$@\"; \"$b\" \"$@\"; r=$?; rm -rf \"$c\"; exit $r; fi; "
    "rm -f \"$w\"; [ -z \"$x\" ] || rm -rf \"$c\"; "
    "echo \"ezpz: the shipped binary did not arrive intact on $(hostname)\" >&2; exit 126";
}  // namespace

std::string remote_command(const BroadcastSpec& spec, const std::vector<std::string>& args, Ship ship) {
  std::vector<std::string> argv = {"sh",
                                   "-c",
                                   std::string(kStartScript),
                                   "ezpz",
                                   spec.self_exe,
                                   spec.exe_digest,
                                   std::to_string(spec.exe_size),
                                   ship == Ship::when_missing ? "1" : "0"};
  argv.insert(argv.end(), args.begin(), args.end());
  return shell_join(argv);
}

std::vector<std::string> relay_args(const BroadcastSpec& spec, const RelayNode& node) {
  auto args = passed_down(spec);
  args.host = node.host;
  args.children = encode_tree(node.children);
  auto out = to_argv(args);
  out.insert(out.begin(), std::string(kRelayRow));
  return out;
}

std::vector<std::string> send_args(const BroadcastSpec& spec, const std::vector<RelayNode>& tree) {
  auto args = passed_down(spec);
  args.children = encode_tree(tree);
  auto out = to_argv(args);
  out.insert(out.begin(), "__yeet-send");
  return out;
}

std::string_view to_string(TransportKind kind) {
  return kind == TransportKind::launcher ? "launcher" : "ssh";
}

std::string_view to_string(NodeOutcome o) {
  switch (o) {
    case NodeOutcome::ok:
      return "ok";
    case NodeOutcome::repaired:
      return "repaired";
    case NodeOutcome::failed:
      return "failed";
    case NodeOutcome::needs_full_copy:
      return "needs_full_copy";
    case NodeOutcome::orphaned:
      return "orphaned";
  }
  return "failed";
}

std::optional<NodeOutcome> parse_node_outcome(std::string_view text) {
  for (auto o : {NodeOutcome::ok, NodeOutcome::repaired, NodeOutcome::failed, NodeOutcome::needs_full_copy,
                 NodeOutcome::orphaned}) {
    if (to_string(o) == text) {
      return o;
    }
  }
  return std::nullopt;
}

std::string encode_result(const NodeResult& r) {
  return nlohmann::json{{"host", r.host},
                        {"ok", r.ok()},
                        {"outcome", to_string(r.outcome)},
                        {"seconds", r.seconds},
                        {"bytes", r.bytes},
                        {"digest_ok", r.digest_ok},
                        {"error", r.error},
                        {"reattached_to", r.reattached_to}}
      .dump();
}

std::optional<NodeResult> decode_result(std::string_view line) {
  // A peer's line: anything that is not a well-typed result is not a result (never an exception).
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("host") || !j["host"].is_string()) {
    return std::nullopt;
  }
  NodeResult r;
  using json_fields::get;
  bool ok = false;
  std::string outcome;
  if (!get(j, "host", r.host) || !get(j, "ok", ok) || !get(j, "seconds", r.seconds) || !get(j, "bytes", r.bytes) ||
      !get(j, "digest_ok", r.digest_ok) || !get(j, "error", r.error) || !get(j, "reattached_to", r.reattached_to) ||
      !get(j, "outcome", outcome)) {
    return std::nullopt;
  }
  // A line without "outcome" (an older relay) says only ok or not.
  const auto parsed =
      outcome.empty() ? std::optional(ok ? NodeOutcome::ok : NodeOutcome::failed) : parse_node_outcome(outcome);
  if (!parsed || (*parsed == NodeOutcome::ok || *parsed == NodeOutcome::repaired) != ok) {
    return std::nullopt;
  }
  r.outcome = *parsed;
  return r;
}

Expected<void> check_success_rule(const SuccessRule& rule) {
  if (rule.min_nodes && rule.min_fraction) {
    return usage_error("--min-success-nodes and --min-success-fraction are mutually exclusive; pick one");
  }
  if (rule.min_nodes && *rule.min_nodes < 1) {
    return usage_error("--min-success-nodes must be >= 1 (got " + std::to_string(*rule.min_nodes) + ")");
  }
  if (rule.min_fraction && (*rule.min_fraction <= 0 || *rule.min_fraction > 1)) {
    return usage_error("--min-success-fraction must be in (0, 1] (got " + std::to_string(*rule.min_fraction) + ")");
  }
  return {};
}

bool success(const SuccessRule& rule, int succeeded, int total) {
  if (rule.min_nodes) {
    return succeeded >= *rule.min_nodes;
  }
  if (rule.min_fraction) {
    return succeeded >= static_cast<int>(std::ceil(*rule.min_fraction * total - 1e-9));
  }
  return succeeded == total;
}

}  // namespace ezpz::core
