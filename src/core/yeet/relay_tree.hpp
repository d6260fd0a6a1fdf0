// yeet's relay tree: which relay feeds which, and its encoding on a relay's command line. Pure
// data; sys/broadcast moves the bytes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/expected.hpp"
#include "core/job/hostlist.hpp"

namespace ezpz::core {

/// A relay and the relays it feeds.
struct RelayNode {
  std::string host;
  std::vector<RelayNode> children;
  bool operator==(const RelayNode&) const = default;
};

/// A tree of relays over `targets`, breadth first, `fanout` children per node (the head
/// included): the first `fanout` targets are fed by the head, and so on.
[[nodiscard]] std::vector<RelayNode> relay_tree(const HostList& targets, int fanout);

/// All hosts in a subtree, the root first.
[[nodiscard]] HostList subtree_hosts(const RelayNode& node);

/// "a(b(d),c)" for the relay's --children argument; host names cannot hold "(),".
[[nodiscard]] std::string encode_tree(const std::vector<RelayNode>& nodes);
[[nodiscard]] Expected<std::vector<RelayNode>> decode_tree(std::string_view text);

}  // namespace ezpz::core
