
#include "core/yeet/relay_tree.hpp"

#include <algorithm>

namespace ezpz::core {

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

}  // namespace ezpz::core
