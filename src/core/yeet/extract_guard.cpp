#include "core/yeet/extract_guard.hpp"

#include <deque>

namespace ezpz::core {
namespace {

std::vector<std::string> components(std::string_view path) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    auto slash = path.find('/', start);
    auto part = path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (!part.empty() && part != ".") {
      out.emplace_back(part);
    }
    if (slash == std::string_view::npos) {
      break;
    }
    start = slash + 1;
  }
  return out;
}

std::string join_components(const std::vector<std::string>& parts, std::size_t count) {
  std::string out;
  for (std::size_t i = 0; i < count; ++i) {
    if (i > 0) {
      out += '/';
    }
    out += parts[i];
  }
  return out;
}

bool has_dot_dot(const std::vector<std::string>& parts) {
  for (const auto& p : parts) {
    if (p == "..") {
      return true;
    }
  }
  return false;
}

EntryVerdict refuse(Refusal r, std::string reason) {
  EntryVerdict v;
  v.refusal = r;
  v.reason = std::move(reason);
  return v;
}

bool is_special(EntryKind kind) {
  return kind != EntryKind::file && kind != EntryKind::dir && kind != EntryKind::symlink && kind != EntryKind::hardlink;
}

}  // namespace

unsigned safe_mode(unsigned mode, unsigned umask) {
  return (mode & 0777U) & ~umask & ~0022U;
}

std::string normalize_entry_name(std::string_view name) {
  const auto parts = components(name);
  return join_components(parts, parts.size());
}

std::string_view describe(EntryKind kind) {
  switch (kind) {
    case EntryKind::file:
      return "a file";
    case EntryKind::dir:
      return "a directory";
    case EntryKind::symlink:
      return "a symlink";
    case EntryKind::hardlink:
      return "a hard link";
    case EntryKind::fifo:
      return "a FIFO (named pipe)";
    case EntryKind::socket:
      return "a socket";
    case EntryKind::char_device:
      return "a character device";
    case EntryKind::block_device:
      return "a block device";
    case EntryKind::other:
      break;
  }
  return "an entry of an unknown kind";
}

EntryVerdict ExtractGuard::admit(std::string_view raw, EntryKind kind, std::string_view link) {
  if (raw.empty()) {
    return refuse(Refusal::empty_name, "its name is empty");
  }
  if (raw.front() == '/') {
    return refuse(Refusal::absolute, "absolute path");
  }
  const auto parts = components(raw);
  if (has_dot_dot(parts)) {
    return refuse(Refusal::dot_dot, "'..' leaves the destination");
  }
  if (parts.size() > limits_.max_depth) {
    return refuse(Refusal::too_deep, std::to_string(parts.size()) + " directories deep, past the limit of " +
                                         std::to_string(limits_.max_depth));
  }
  if (raw.size() > limits_.max_path) {
    return refuse(Refusal::too_long, "a name of " + std::to_string(raw.size()) + " bytes, past the limit of " +
                                         std::to_string(limits_.max_path));
  }
  if (is_special(kind)) {
    return refuse(Refusal::special_file,
                  std::string(describe(kind)) + ", which a Python env never needs: repack without it");
  }
  EntryVerdict v;
  v.name = join_components(parts, parts.size());
  if (v.name.empty() && kind != EntryKind::dir) {
    return refuse(Refusal::empty_name, "it names the destination itself");
  }
  // Nothing below a file or a link: libarchive would replace a file by a directory on the way.
  for (std::size_t n = parts.empty() ? 0 : parts.size() - 1; n > 0; --n) {
    if (auto it = nodes_.find(join_components(parts, n)); it != nodes_.end()) {
      if (it->second.kind != EntryKind::dir) {
        return refuse(Refusal::kind_change,
                      "it lies under " + std::string(describe(it->second.kind)) + " of the archive");
      }
      break;  // its parents were seen with it
    }
  }
  Node node{kind, {}};
  if (kind == EntryKind::symlink) {
    if (link.size() > limits_.max_path) {
      return refuse(Refusal::too_long, "a symlink target of " + std::to_string(link.size()) + " bytes");
    }
    if (!link.empty() && link.front() != '/' &&
        resolve(v.name, std::string(link), 0, limits_.resolve_links ? Through::links : Through::text) !=
            Refusal::none) {
      return refuse(Refusal::symlink_escape, "it leads outside the destination");
    }
    node.target = link;
  } else if (kind == EntryKind::hardlink) {
    const auto target_parts = components(link);
    const auto target = join_components(target_parts, target_parts.size());
    if (link.empty() || link.front() == '/' || has_dot_dot(target_parts) || target.empty()) {
      return refuse(Refusal::hardlink_target, "target outside the destination");
    }
    auto it = nodes_.find(target);
    if (it == nodes_.end() || it->second.kind == EntryKind::dir) {
      return refuse(Refusal::hardlink_target, "its target is not a file extracted before it");
    }
    // A hard link to a symlink is that symlink again, read from another directory.
    node = it->second;
  }
  if (auto it = nodes_.find(v.name); it != nodes_.end()) {
    if (it->second.kind == EntryKind::dir && kind != EntryKind::dir) {
      return refuse(Refusal::kind_change,
                    "stored twice: first a directory, then " + std::string(describe(kind)) + "; repack the archive");
    }
    v.replaces = !(it->second.kind == EntryKind::dir && kind == EntryKind::dir);
    it->second = node;
  } else if (!v.name.empty()) {
    nodes_.emplace(v.name, node);
    // Its parents exist now (libarchive makes them): a file stored later under such a name
    // is a kind change too.
    for (std::size_t n = parts.size() - 1;
         n > 0 && nodes_.emplace(join_components(parts, n), Node{EntryKind::dir, {}}).second; --n) {
    }
    if (top_names_.size() < 2 && (top_names_.empty() || top_names_.front() != parts.front())) {
      top_names_.push_back(parts.front());
    }
  }
  return v;
}

std::string ExtractGuard::lifted_top() const {
  if (top_names_.size() != 1) {
    return {};
  }
  auto it = nodes_.find(top_names_.front());
  // Implicit (only "top/x" entries) or stored as a directory; a symlink is not lifted.
  return it == nodes_.end() || it->second.kind == EntryKind::dir ? top_names_.front() : std::string();
}

Refusal ExtractGuard::resolve(const std::string& name, const std::string& target, std::size_t root,
                              Through through) const {
  const bool through_links = through == Through::links;
  auto pos = components(name);
  if (pos.empty()) {
    return Refusal::symlink_escape;  // the root itself is no link
  }
  pos.pop_back();  // the link's own name
  auto parts = components(target);
  std::deque<std::string> todo(parts.begin(), parts.end());
  int hops = 0;
  while (!todo.empty()) {
    auto part = std::move(todo.front());
    todo.pop_front();
    if (part == "..") {
      if (pos.size() <= root) {
        return Refusal::symlink_escape;
      }
      pos.pop_back();
      continue;
    }
    pos.push_back(std::move(part));
    if (!through_links) {
      continue;
    }
    auto it = nodes_.find(join_components(pos, pos.size()));
    if (it == nodes_.end() || it->second.kind != EntryKind::symlink) {
      continue;
    }
    if (++hops > kMaxLinkHops) {
      return Refusal::symlink_loop;
    }
    pos.pop_back();
    const auto& next = it->second.target;
    if (next.empty() || next.front() == '/') {
      return Refusal::none;  // through an absolute link: not followed while extracting, as absolute links
    }
    auto more = components(next);
    todo.insert(todo.begin(), more.begin(), more.end());
  }
  return Refusal::none;
}

EntryVerdict ExtractGuard::check_links() const {
  if (!limits_.resolve_links) {
    return {};
  }
  const auto top = lifted_top();
  const std::size_t root = top.empty() ? 0 : 1;
  for (const auto& [name, node] : nodes_) {
    if (node.kind != EntryKind::symlink || node.target.empty() || node.target.front() == '/') {
      continue;
    }
    if (auto r = resolve(name, node.target, root, Through::links); r != Refusal::none) {
      auto v =
          refuse(r, r == Refusal::symlink_loop ? "its chain of links does not end"
                                               : "through the tree's other links it leads outside the destination");
      v.name = name + " -> " + node.target;
      return v;
    }
  }
  return {};
}

}  // namespace ezpz::core
