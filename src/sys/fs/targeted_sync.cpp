#include "sys/fs/targeted_sync.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/fs/incremental.hpp"
#include "sys/fs/spare.hpp"
#include "sys/fs/tree.hpp"

namespace ezpz::sys {
namespace {

/// Each parent directory of `path` ("a/b/c": "a/b", "a") into `dirs`.
void add_parents(std::set<std::string>& dirs, const std::string& path) {
  for (auto slash = path.rfind('/'); slash != std::string::npos && slash > 0; slash = path.rfind('/', slash - 1)) {
    if (!dirs.insert(path.substr(0, slash)).second) {
      break;  // and its parents are in already
    }
  }
}

/// One source entry brought over into `out` in place of what the copy had there: a directory
/// made (its mode and mtime set at the end), a symlink made anew, a file copied as a new inode.
Expected<void> bring_over(const std::string& source, const std::string& out, const TreeEntry& e, core::TreeStats& stats,
                          unsigned long long& done, const core::ProgressFn& progress) {
  const std::string to = join_path(out, e.path);
  struct stat have {};
  const bool exists = ::lstat(to.c_str(), &have) == 0;
  const bool is_dir = exists && S_ISDIR(have.st_mode);
  if (S_ISDIR(e.st.st_mode)) {
    if (exists && !is_dir) {
      EZPZ_TRY(remove_tree(to));
    }
    if (!is_dir && ::mkdir(to.c_str(), 0700) != 0) {
      return io_error("cannot create directory", to);
    }
    return {};
  }
  if (S_ISLNK(e.st.st_mode)) {
    EZPZ_TRY(exists ? remove_tree(to) : Expected<void>());
    return make_symlink(e.link_target, to, e.st);
  }
  if (!S_ISREG(e.st.st_mode)) {  // a FIFO, socket or device: never copied; what was there goes
    if (stats.skipped++ == 0) {
      stats.first_skipped = e.path;
    }
    return exists ? remove_tree(to) : Expected<void>();
  }
  const std::string tmp = unused_beside(to);  // never an entry the tree has by that name
  EZPZ_TRY(copy_bytes(join_path(source, e.path), tmp, e.st, done, progress));
  ++stats.copied_files;
  if (is_dir) {
    EZPZ_TRY(remove_tree(to));
  }
  if (::rename(tmp.c_str(), to.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return io_error("cannot replace", to);
  }
  return {};
}

/// The new tree's totals: `base`'s entries that stay, and what was brought over.
void count_tree(const core::Manifest& base, const std::set<std::string>& replaced, const std::string& out,
                core::TreeStats& stats) {
  for (const auto& [path, e] : base.entries) {
    if (replaced.count(path) == 0) {
      stats.files += e.type == 'f' ? 1 : 0;
      stats.dirs += e.type == 'd' ? 1 : 0;
      stats.links += e.type == 'l' ? 1 : 0;
      stats.bytes += e.type == 'f' ? e.size : 0;
    }
  }
  for (const auto& path : replaced) {
    struct stat st {};
    if (::lstat(join_path(out, path).c_str(), &st) == 0) {
      (void)tally(stats, st);
    }
  }
}

}  // namespace

Expected<core::TreeStats> sync_changes(const std::string& source, const std::string& dst,
                                       const core::HeldManifest& held, const core::ChangeEstimate& changes,
                                       const std::string& out, const core::ProgressFn& progress,
                                       const std::atomic<bool>& stop) {
  // 1. The previous copy, as hard links: dst's spare brought up to it, or a clone. Never
  // written to (changed files are new inodes).
  const auto& base = held.manifest;
  EZPZ_TRY_ASSIGN(auto spare, take_spare(dst, held, out));
  EZPZ_TRY_ASSIGN(const auto narrowed, spare ? Expected<DirModes>(std::move(*spare)) : clone_as_links(dst, base, out));
  core::TreeStats stats;
  std::set<std::string> parents;  // directories written in: their mode and mtime set last
  // 2. What the source lost, deepest first (a directory's contents are listed before it).
  const std::set<std::string> gone(changes.gone.begin(), changes.gone.end());
  for (auto it = changes.gone.rbegin(); it != changes.gone.rend(); ++it) {
    EZPZ_TRY(remove_tree(join_path(out, *it)));
    const auto slash = it->rfind('/');
    if (slash == std::string::npos || gone.count(it->substr(0, slash)) == 0) {
      ++stats.deleted;  // counted where the removal starts, as sync_tree counts it
      add_parents(parents, *it);
    }
  }
  // 3. What is new or changed, parents before children.
  unsigned long long done = 0;
  std::vector<TreeEntry> dirs;
  for (const auto& path : changes.changed) {
    if (stop.load()) {
      return failure("interrupted");
    }
    EZPZ_TRY_ASSIGN(auto e, stat_at(source, path));
    EZPZ_TRY(bring_over(source, out, e, stats, done, progress));
    add_parents(parents, path);
    if (S_ISDIR(e.st.st_mode)) {
      dirs.push_back(std::move(e));
    }
  }
  // 4. Modes and mtimes of the directories, deepest first: the clone's own (those it opened up),
  // then the source's for the ones brought over or written in.
  EZPZ_TRY(restore_modes(out, narrowed, changes.changed));
  for (const auto& path : parents) {
    if (std::none_of(dirs.begin(), dirs.end(), [&](const TreeEntry& d) { return d.path == path; })) {
      if (auto e = stat_at(source, path); e && S_ISDIR(e->st.st_mode)) {
        dirs.push_back(std::move(*e));
      }
    }
  }
  std::sort(dirs.begin(), dirs.end(), [](const TreeEntry& a, const TreeEntry& b) { return a.path > b.path; });
  for (const auto& d : dirs) {
    const auto path = join_path(out, d.path);
    const struct timespec times[2] = {d.st.st_atim, d.st.st_mtim};
    if (::chmod(path.c_str(), d.st.st_mode & 07777) != 0 ||
        ::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) {
      return io_error("cannot set the mode of", path);
    }
  }
  std::set<std::string> replaced(changes.changed.begin(), changes.changed.end());
  replaced.insert(gone.begin(), gone.end());
  count_tree(base, replaced, out, stats);
  return stats;
}

Expected<core::HeldManifest> update_manifest(const std::string& root, const core::HeldManifest& base,
                                             const std::string& source_root, const std::vector<std::string>& touched,
                                             const std::vector<std::string>& gone) {
  core::Manifest m = base.manifest;
  for (const auto& path : gone) {
    m.entries.erase(path);
  }
  std::set<std::string> paths(touched.begin(), touched.end());
  for (const auto& path : touched) {
    add_parents(paths, path);
  }
  for (const auto& path : gone) {
    add_parents(paths, path);
  }
  for (const auto& path : paths) {
    auto e = stat_at(root, path);
    if (!e) {  // not in the new tree (a FIFO the source has, left out): nor in its manifest
      m.entries.erase(path);
      continue;
    }
    const auto s = stat_entry(*e);
    auto& entry = m.entries[path];
    const auto before = entry;
    entry = core::ManifestEntry{path, s.type, s.mode, s.size, s.mtime_ns, {}, s.link, 0, 0};
    if (s.type != 'f') {
      continue;
    }
    if (before.type == 'f' && before.size == s.size && before.mtime_ns == s.mtime_ns && before.mode == s.mode &&
        !before.digest.empty()) {
      entry.digest = before.digest;
    } else {
      EZPZ_TRY_ASSIGN(entry.digest, file_sha256(join_path(root, path)));
    }
    struct stat src {};
    if (::lstat(join_path(source_root, path).c_str(), &src) == 0 && S_ISREG(src.st_mode)) {
      entry.src_size = static_cast<unsigned long long>(src.st_size);
      entry.src_mtime_ns = static_cast<long long>(src.st_mtim.tv_sec) * 1000000000LL + src.st_mtim.tv_nsec;
    }
  }
  auto text = core::encode_manifest_reusing(m, base.manifest, base.text);
  EZPZ_TRY(replace_file(join_path(root, std::string(core::kManifestName)), text, 0644));
  auto digest = text_sha256(text);
  return core::HeldManifest{std::move(m), std::move(digest), std::move(text)};
}

}  // namespace ezpz::sys
