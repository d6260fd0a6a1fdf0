// Directory trees on the local filesystem: walk, copy, sync, remove, swap into place.
// Never follows symlinks; every path is handled relative to an open directory.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include <sys/stat.h>

#include "core/base/expected.hpp"
#include "core/yeet/transfer.hpp"
#include "sys/fs/remove.hpp"

namespace ezpz::sys {

/// "WHAT PATH: " and errno's text, as a failure.
[[nodiscard]] Error io_error(const std::string& what, const std::string& path);

/// `a`/`b` (either alone when the other is empty).
[[nodiscard]] std::string join_path(const std::string& a, const std::string& b);

struct TreeEntry {
  std::string path;  ///< relative to the root ("" for the root itself)
  struct stat st {};
  std::string link_target;  ///< for symlinks
};

/// The entry `rel` below `root` as lstat sees it (a symlink's target read too).
[[nodiscard]] Expected<TreeEntry> stat_at(const std::string& root, const std::string& rel);

/// Whether `dir` is a directory holding nothing (false when it cannot be read).
[[nodiscard]] bool is_empty_dir(const std::string& dir);

/// Count one entry into `stats` (kind, bytes, newest mtime); false for sockets, fifos and
/// devices, which are never copied or packed.
bool tally(core::TreeStats& stats, const struct stat& st);

/// Visit `root` depth-first, parents before children; names in `excludes` are skipped
/// (directories and their contents). Return false from `visit` to stop.
Expected<void> walk_tree(const std::string& root, const std::vector<std::string>& excludes,
                         const std::function<bool(const TreeEntry&)>& visit);

Expected<core::TreeStats> copy_tree(const std::string& src, const std::string& dst,
                                    const std::vector<std::string>& excludes, const core::ProgressFn& progress,
                                    const std::atomic<bool>& stop);

Expected<core::TreeStats> sync_tree(const std::string& src, const std::string& previous, const std::string& dst,
                                    const std::vector<std::string>& excludes, const core::ProgressFn& progress,
                                    const std::atomic<bool>& stop);

/// When `dir` holds exactly one entry and it is a directory (an archive of NAME/...), make
/// that directory's contents `dir`'s. True when it did.
Expected<bool> lift_single_directory(const std::string& dir);

/// Put `staging` at `destination`: rename, or an atomic exchange when it exists, then remove the
/// old tree. `destination` is the old tree or the new one at every moment, but where the
/// filesystem has no atomic exchange (the old tree is moved aside, then the new one in: a run
/// killed between leaves a .old that the next run or the watcher puts back). An error leaves
/// the old tree in place; a previous tree that could not be removed is a leftover (a warning).
Expected<Leftovers> commit_tree(const std::string& staging, const std::string& destination);
/// commit_tree's first part: `staging` in place of `destination`; where the previous tree now
/// is ("" when there was none), for the caller to remove.
Expected<std::string> swap_tree(const std::string& staging, const std::string& destination);

/// Copy one regular file's bytes to the new file `to` (copy_file_range, falling back to
/// read/write), with `st`'s mode and times; `done` counts the bytes for `progress`.
Expected<void> copy_bytes(const std::string& from, const std::string& to, const struct stat& st,
                          unsigned long long& done, const core::ProgressFn& progress);

/// A name beside `path` that nothing has (`path`.ezpz-new, or .ezpz-new.N), for a file written
/// there and renamed over `path`: never an entry of the tree that happens to have that name.
[[nodiscard]] std::string unused_beside(const std::string& path);

/// A new symlink at `path` to `target`, with `st`'s times.
Expected<void> make_symlink(const std::string& target, const std::string& path, const struct stat& st);

/// Write `text` to `path` through a temporary file and rename, with `mode`.
Expected<void> replace_file(const std::string& path, const std::string& text, mode_t mode);

}  // namespace ezpz::sys
