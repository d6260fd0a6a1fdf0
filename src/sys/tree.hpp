// Directory trees on the local filesystem: walk, copy, sync, remove, swap into place.
// Never follows symlinks; every path is handled relative to an open directory.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include <sys/stat.h>

#include "core/expected.hpp"
#include "core/transfer.hpp"

namespace ezpz::sys {

struct TreeEntry {
  std::string path;  ///< relative to the root ("" for the root itself)
  struct stat st {};
  std::string link_target;  ///< for symlinks
};

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

/// Remove work directories (<destination>.ezpz-tmp-<pid>[.lift]) left by runs whose process is
/// gone (killed with SIGKILL, or a node that rebooted mid-run), after putting back a destination
/// such a run had moved aside (see remove_work_paths).
void remove_stale_staging(const std::string& destination);

/// Remove the work paths of run `pid` beside `destination` (<dst>.ezpz-tmp-<pid> and the names
/// made from it: .apply, .lift, .old, .delta, .pack.tar.zst), as remove_work_paths does.
void remove_work_of(const std::string& destination, long pid);

/// Remove work paths of a run that is gone (beside `destination`), after putting back a
/// destination it had moved aside (a `.old`) but not replaced: `destination` missing.
void remove_work_paths(const std::string& destination, const std::vector<std::string>& paths);

/// rm -rf without following symlinks; errors ignored.
void remove_tree(const std::string& path);

/// Put `staging` at `destination`: rename, or an atomic exchange when it exists, then remove the old tree.
Expected<void> commit_tree(const std::string& staging, const std::string& destination);

/// Write `text` to `path` through a temporary file and rename, with `mode`.
Expected<void> replace_file(const std::string& path, const std::string& text, mode_t mode);

/// The first `n` bytes of a file (fewer when it is shorter).
Expected<std::string> read_head(const std::string& path, std::size_t n);

/// Read a whole file (at most `limit` bytes; more is an error).
Expected<std::string> read_whole(const std::string& path, std::size_t limit = std::size_t(1) << 30);

}  // namespace ezpz::sys
