// Removing trees that ezpz made (work directories, previous copies), whatever they hold: any
// depth or path length, read-only directories, symlinks (never followed). A removal that
// fails says so: what is left must then be removed by hand.
#pragma once

#include <string>
#include <vector>

#include "core/base/expected.hpp"

namespace ezpz::sys {

/// Warning lines, one for each path a removal left behind: what is left, why, and that it
/// must be removed by hand.
using Leftovers = std::vector<std::string>;

/// rm -rf `path`, never following a symlink (a symlink or file at `path` is unlinked). The
/// tree is walked through directory descriptors (openat, unlinkat, each directory read once),
/// so neither its depth nor its paths' length matter, with a few descriptors and no recursion
/// whatever the depth; directories without owner rwx get it first; another filesystem mounted
/// inside is not entered. A missing `path` is success. On failure the rest is still removed
/// and the error (a warning line) names the first entry left and why, how many more failed,
/// and that `path` must be removed by hand.
Expected<void> remove_tree(const std::string& path);

/// Remove work directories (<destination>.ezpz-tmp-<pid>[.lift]) left by runs whose process is
/// gone (killed with SIGKILL, or a node that rebooted mid-run), after putting back a destination
/// such a run had moved aside (see remove_work_paths).
[[nodiscard]] Leftovers remove_stale_staging(const std::string& destination);

/// Remove the work paths of run `pid` beside `destination` (<dst>.ezpz-tmp-<pid> and the names
/// made from it: .apply, .lift, .old, .delta, .pack.tar.zst), as remove_work_paths does.
[[nodiscard]] Leftovers remove_work_of(const std::string& destination, long pid);

/// Remove work paths of a run that is gone (beside `destination`), after putting back a
/// destination it had moved aside (a `.old`) but not replaced: `destination` missing.
[[nodiscard]] Leftovers remove_work_paths(const std::string& destination, const std::vector<std::string>& paths);

}  // namespace ezpz::sys
