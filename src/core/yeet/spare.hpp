// A destination's spare: beside each copy yeet keeps for incremental updates, the tree it held
// before its last update (or, after a whole tree arrived, a twin of it), as hard links. The next
// update starts from it (what changed since is linked over from the copy) instead of cloning the
// whole copy, and the tree it replaces becomes the next spare instead of being removed: what a
// small change costs is about what changed. Its cost on disk: its directories and symlinks, and
// the old versions of what the last update replaced.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/yeet/manifest.hpp"

namespace ezpz::core {

/// <destination>.ezpz-spare (never a work name: no sweep or watcher removes it).
inline constexpr std::string_view kSpareSuffix = ".ezpz-spare";

inline std::string spare_path(const std::string& destination) {
  return destination + std::string(kSpareSuffix);
}

/// What a commit does with the tree it replaces (Staging::commit).
enum class Previous {
  replace,        ///< removed; the spare becomes a twin of the new tree (when it holds a manifest)
  keep_as_spare,  ///< the new tree was made from it and shares all but what changed: it is the spare
};

/// The tree `old` describes, replaced by one made from it that shares all but `removed` (each
/// with what lies under it) and `changed` (each alone: a directory's new mode or mtime leaves
/// its contents shared): keep_as_spare when what only it would hold then is at most an eighth
/// of its file bytes, else replace.
[[nodiscard]] Previous previous_after(const Manifest& old, const std::vector<std::string>& removed,
                                      const std::vector<std::string>& changed);

}  // namespace ezpz::core
