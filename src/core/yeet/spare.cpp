#include "core/yeet/spare.hpp"

#include <set>

namespace ezpz::core {

Previous previous_after(const Manifest& old, const std::vector<std::string>& removed,
                        const std::vector<std::string>& changed) {
  unsigned long long total = 0;
  for (const auto& [path, e] : old.entries) {
    total += e.type == 'f' ? e.size : 0;
  }
  // Each replaced path and what lies under it, counted once (a removed directory and its files
  // may all be listed).
  const std::set<std::string> paths(removed.begin(), removed.end());
  auto under_another = [&paths](const std::string& path) {
    for (auto slash = path.rfind('/'); slash != std::string::npos && slash > 0; slash = path.rfind('/', slash - 1)) {
      if (paths.count(path.substr(0, slash)) != 0) {
        return true;
      }
    }
    return false;
  };
  unsigned long long only_old = 0;
  for (const auto& path : paths) {
    if (under_another(path)) {
      continue;  // counted with its parent
    }
    if (auto it = old.entries.find(path); it != old.entries.end() && it->second.type == 'f') {
      only_old += it->second.size;
    }
    const std::string below = path + "/";
    for (auto it = old.entries.lower_bound(below);
         it != old.entries.end() && it->first.compare(0, below.size(), below) == 0; ++it) {
      only_old += it->second.type == 'f' ? it->second.size : 0;
    }
  }
  for (const auto& path : changed) {
    auto it = old.entries.find(path);
    if (it != old.entries.end() && it->second.type == 'f' && paths.count(path) == 0 && !under_another(path)) {
      only_old += it->second.size;
    }
  }
  return only_old * 8 <= total ? Previous::keep_as_spare : Previous::replace;
}

}  // namespace ezpz::core
