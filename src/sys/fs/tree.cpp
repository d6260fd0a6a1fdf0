#include "sys/fs/tree.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/yeet/manifest.hpp"
#include "sys/os/fd_io.hpp"
#include "sys/os/owned.hpp"

namespace ezpz::sys {
Error io_error(const std::string& what, const std::string& path) {
  return failure(what + " " + path + ": " + std::strerror(errno));
}

std::string join_path(const std::string& a, const std::string& b) {
  if (a.empty()) {
    return b;
  }
  if (b.empty()) {
    return a;
  }
  return a + "/" + b;
}

namespace {

bool excluded(const std::string& name, const std::vector<std::string>& excludes) {
  return std::find(excludes.begin(), excludes.end(), name) != excludes.end();
}

}  // namespace

Expected<TreeEntry> stat_at(const std::string& root, const std::string& rel) {
  TreeEntry entry;
  entry.path = rel;
  const std::string full = join_path(root, rel);
  if (::lstat(full.c_str(), &entry.st) != 0) {
    return io_error("cannot stat", full);
  }
  if (S_ISLNK(entry.st.st_mode)) {
    char buf[4096];
    const auto n = ::readlink(full.c_str(), buf, sizeof(buf) - 1);
    if (n < 0) {
      return io_error("cannot read link", full);
    }
    entry.link_target.assign(buf, static_cast<std::size_t>(n));
  }
  return entry;
}

namespace {

Expected<void> walk_dir(const std::string& root, const std::string& rel, const std::vector<std::string>& excludes,
                        const std::function<bool(const TreeEntry&)>& visit, bool& stopped) {
  const std::string path = join_path(root, rel);
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) {
    return io_error("cannot read directory", path);
  }
  std::vector<std::string> names;
  while (auto* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name != "." && name != ".." && !excluded(name, excludes)) {
      names.push_back(std::move(name));
    }
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    EZPZ_TRY_ASSIGN(const auto entry, stat_at(root, join_path(rel, name)));
    if (!visit(entry)) {
      stopped = true;
      return {};
    }
    if (S_ISDIR(entry.st.st_mode)) {
      if (auto r = walk_dir(root, entry.path, excludes, visit, stopped); !r || stopped) {
        return r;
      }
    }
  }
  return {};
}

}  // namespace

/// Copy one regular file's bytes (copy_file_range, falling back to read/write).
Expected<void> copy_bytes(const std::string& from, const std::string& to, const struct stat& st,
                          unsigned long long& done, const core::ProgressFn& progress) {
  // What was a file when listed may be a FIFO now.
  EZPZ_TRY_ASSIGN(const auto opened, open_regular(from));
  const int in = opened.get();
  OwnedFd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!out.valid()) {
    return io_error("cannot create", to);
  }
  ScopeGuard remove_partial([&to] { ::unlink(to.c_str()); });
  bool fallback = false;
  off_t left = st.st_size;
  while (left > 0) {
    ssize_t n = -1;
    if (!fallback) {
      n = ::copy_file_range(in, nullptr, out.get(), nullptr, static_cast<std::size_t>(std::min<off_t>(left, 1 << 24)),
                            0);
      if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
        fallback = true;
        continue;
      }
    } else {
      static thread_local std::vector<char> buf(1 << 20);
      n = ::read(in, buf.data(), buf.size());
      // A short write is written on (write_all); a failed one says why (ENOSPC, not the EXDEV
      // that sent us here).
      if (n > 0 && !write_all(out.get(), buf.data(), static_cast<std::size_t>(n))) {
        return io_error("cannot write", to);
      }
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == ENOSPC || errno == EDQUOT || errno == EFBIG)) {
      return io_error("cannot write", to);  // copy_file_range fails on the destination's side
    }
    if (n <= 0) {
      return n == 0 ? failure("file " + from + " shrank while being copied") : io_error("cannot copy", from);
    }
    left -= n;
    done += static_cast<unsigned long long>(n);
    if (progress) {
      progress(done);
    }
  }
  ::fchmod(out.get(), st.st_mode & 07777);
  const struct timespec times[2] = {st.st_atim, st.st_mtim};
  ::futimens(out.get(), times);
  if (!out.close()) {
    return io_error("cannot write", to);
  }
  remove_partial.dismiss();
  return {};
}

Expected<void> make_symlink(const std::string& target, const std::string& path, const struct stat& st) {
  if (::symlink(target.c_str(), path.c_str()) != 0) {
    return io_error("cannot create symlink", path);
  }
  const struct timespec times[2] = {st.st_atim, st.st_mtim};
  ::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW);
  return {};
}

namespace {

/// Directory modes and mtimes are applied last, deepest first, so writing files inside
/// does not change them again and read-only directories can still be filled.
void finish_dirs(const std::string& root, std::vector<TreeEntry>& dirs) {
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    const std::string path = join_path(root, it->path);
    ::chmod(path.c_str(), it->st.st_mode & 07777);
    const struct timespec times[2] = {it->st.st_atim, it->st.st_mtim};
    ::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW);
  }
}

/// A FIFO, socket or device in the source: counted, never copied or opened.
void skipped(core::TreeStats& stats, const std::string& path) {
  if (stats.skipped++ == 0) {
    stats.first_skipped = path;
  }
}

Error interrupted() {
  return failure("interrupted");
}

}  // namespace

bool tally(core::TreeStats& stats, const struct stat& st) {
  stats.newest_mtime = std::max<long long>(stats.newest_mtime, st.st_mtim.tv_sec);
  if (S_ISDIR(st.st_mode)) {
    ++stats.dirs;
  } else if (S_ISLNK(st.st_mode)) {
    ++stats.links;
  } else if (S_ISREG(st.st_mode)) {
    ++stats.files;
    stats.bytes += static_cast<unsigned long long>(st.st_size);
  } else {
    return false;
  }
  return true;
}

Expected<void> walk_tree(const std::string& root, const std::vector<std::string>& excludes,
                         const std::function<bool(const TreeEntry&)>& visit) {
  bool stopped = false;
  return walk_dir(root, "", excludes, visit, stopped);
}

Expected<core::TreeStats> copy_tree(const std::string& src, const std::string& dst,
                                    const std::vector<std::string>& excludes, const core::ProgressFn& progress,
                                    const std::atomic<bool>& stop) {
  core::TreeStats stats;
  std::vector<TreeEntry> dirs;
  std::map<std::pair<dev_t, ino_t>, std::string> links;  // hard links already copied
  unsigned long long done = 0;
  std::optional<Error> error;
  EZPZ_TRY(walk_tree(src, excludes, [&](const TreeEntry& e) {
    if (stop.load()) {
      error = interrupted();
      return false;
    }
    const std::string from = join_path(src, e.path);
    const std::string to = join_path(dst, e.path);
    stats.newest_mtime = std::max<long long>(stats.newest_mtime, e.st.st_mtim.tv_sec);
    Expected<void> step;
    if (S_ISDIR(e.st.st_mode)) {
      ++stats.dirs;
      if (::mkdir(to.c_str(), 0700) != 0) {
        step = io_error("cannot create directory", to);
      }
      dirs.push_back(e);
    } else if (S_ISLNK(e.st.st_mode)) {
      ++stats.links;
      step = make_symlink(e.link_target, to, e.st);
    } else if (S_ISREG(e.st.st_mode)) {
      ++stats.files;
      stats.bytes += static_cast<unsigned long long>(e.st.st_size);
      auto key = std::make_pair(e.st.st_dev, e.st.st_ino);
      if (e.st.st_nlink > 1 && links.count(key) != 0) {
        if (::link(join_path(dst, links[key]).c_str(), to.c_str()) != 0) {
          step = io_error("cannot create hard link", to);
        }
      } else {
        step = copy_bytes(from, to, e.st, done, progress);
        ++stats.copied_files;
        if (e.st.st_nlink > 1) {
          links[key] = e.path;
        }
      }
    } else {  // sockets, fifos and devices are not copied (nor opened)
      skipped(stats, e.path);
    }
    if (!step) {
      error = step.error();
      return false;
    }
    return true;
  }));
  if (error) {
    return *error;
  }
  finish_dirs(dst, dirs);
  return stats;
}

namespace {
/// `dst` (an empty directory) = `previous`, by hard links. A file another user owns is never
/// linked into the new tree (she could rewrite it later): it is left out, and copied anew.
Expected<void> clone_tree(const std::string& previous, const std::string& dst, const std::atomic<bool>& stop) {
  std::optional<Error> error;
  const uid_t me = ::geteuid();
  EZPZ_TRY(walk_tree(previous, {}, [&](const TreeEntry& e) {
    if (S_ISREG(e.st.st_mode) && e.st.st_uid != me) {
      return !stop.load();
    }
    const std::string to = join_path(dst, e.path);
    Expected<void> step;
    if (S_ISDIR(e.st.st_mode)) {
      if (::mkdir(to.c_str(), 0700) != 0) {
        step = io_error("cannot create directory", to);
      }
    } else if (S_ISLNK(e.st.st_mode)) {
      step = make_symlink(e.link_target, to, e.st);
    } else if (S_ISREG(e.st.st_mode)) {
      if (::link(join_path(previous, e.path).c_str(), to.c_str()) != 0) {
        step = io_error("cannot hard-link", to);
      }
    }
    if (!step) {
      error = step.error();
      return false;
    }
    return !stop.load();
  }));
  if (error) {
    return *error;
  }
  return {};
}
}  // namespace

Expected<core::TreeStats> sync_tree(const std::string& src, const std::string& previous, const std::string& dst,
                                    const std::vector<std::string>& excludes, const core::ProgressFn& progress,
                                    const std::atomic<bool>& stop) {
  // 1. dst = previous, by hard links: cheap, and the previous tree is never written to. One
  // that cannot be read (deeper than PATH_MAX, an unreadable directory) is not reused: a full
  // copy instead, into an emptied dst.
  if (auto cloned = clone_tree(previous, dst, stop); !cloned) {
    if (stop.load()) {
      return interrupted();
    }
    EZPZ_TRY(remove_tree(dst));
    if (::mkdir(dst.c_str(), 0755) != 0) {
      return io_error("cannot create directory", dst);
    }
    return copy_tree(src, dst, excludes, progress, stop);
  }
  std::optional<Error> error;
  // 2. Bring every source entry over that differs; remember what the source has.
  core::TreeStats stats;
  std::set<std::string> wanted;
  std::vector<TreeEntry> dirs;
  unsigned long long done = 0;
  EZPZ_TRY(walk_tree(src, excludes, [&](const TreeEntry& e) {
    if (stop.load()) {
      error = interrupted();
      return false;
    }
    if (!S_ISDIR(e.st.st_mode) && !S_ISLNK(e.st.st_mode) && !S_ISREG(e.st.st_mode)) {
      skipped(stats, e.path);  // not wanted: what the previous tree has there goes
      return true;
    }
    wanted.insert(e.path);
    stats.newest_mtime = std::max<long long>(stats.newest_mtime, e.st.st_mtim.tv_sec);
    const std::string to = join_path(dst, e.path);
    struct stat have {};
    const bool exists = ::lstat(to.c_str(), &have) == 0;
    Expected<void> step;
    if (S_ISDIR(e.st.st_mode)) {
      ++stats.dirs;
      if (exists && !S_ISDIR(have.st_mode)) {
        ::unlink(to.c_str());
      }
      if ((!exists || !S_ISDIR(have.st_mode)) && ::mkdir(to.c_str(), 0700) != 0) {
        step = io_error("cannot create directory", to);
      }
      dirs.push_back(e);
    } else if (S_ISLNK(e.st.st_mode)) {
      ++stats.links;
      char buf[4096];
      auto n = exists && S_ISLNK(have.st_mode) ? ::readlink(to.c_str(), buf, sizeof(buf) - 1) : -1;
      if (n < 0 || std::string(buf, static_cast<std::size_t>(n)) != e.link_target) {
        if (auto gone = exists ? remove_tree(to) : Expected<void>(); !gone) {
          step = gone.error();
        } else {
          step = make_symlink(e.link_target, to, e.st);
        }
      }
    } else if (S_ISREG(e.st.st_mode)) {
      ++stats.files;
      stats.bytes += static_cast<unsigned long long>(e.st.st_size);
      const bool same = exists && S_ISREG(have.st_mode) && have.st_size == e.st.st_size &&
                        have.st_mtim.tv_sec == e.st.st_mtim.tv_sec && have.st_mtim.tv_nsec == e.st.st_mtim.tv_nsec &&
                        (have.st_mode & 07777) == (e.st.st_mode & 07777);
      if (same) {
        done += static_cast<unsigned long long>(e.st.st_size);
        if (progress) {
          progress(done);
        }
      } else {
        // A new inode: the previous tree keeps its own copy.
        const std::string tmp = unused_beside(to);
        step = copy_bytes(join_path(src, e.path), tmp, e.st, done, progress);
        if (step && exists && S_ISDIR(have.st_mode)) {
          step = remove_tree(to);
        }
        if (step) {
          if (::rename(tmp.c_str(), to.c_str()) != 0) {
            step = io_error("cannot replace", to);
          }
        }
        ++stats.copied_files;
      }
    }
    if (!step) {
      error = step.error();
      return false;
    }
    return true;
  }));
  if (error) {
    return *error;
  }
  // 3. Remove what the source no longer has (excluded names are left alone, and yeet's marker,
  // which it writes anew).
  std::vector<std::string> stale;
  EZPZ_TRY(walk_tree(dst, excludes, [&](const TreeEntry& e) {
    if (wanted.count(e.path) == 0 && e.path != core::kYeetMarkerName) {
      stale.push_back(e.path);
    }
    return true;
  }));
  for (const auto& path : stale) {
    EZPZ_TRY(remove_tree(join_path(dst, path)));
    ++stats.deleted;
  }
  finish_dirs(dst, dirs);
  return stats;
}

Expected<bool> lift_single_directory(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (auto* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") {
        names.push_back(name);
      }
    }
    ::closedir(d);
  }
  struct stat st {};
  if (names.size() != 1 || ::lstat((dir + "/" + names[0]).c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return false;
  }
  const std::string lifted = dir + ".lift";
  if (::rename((dir + "/" + names[0]).c_str(), lifted.c_str()) != 0 || ::rmdir(dir.c_str()) != 0 ||
      ::rename(lifted.c_str(), dir.c_str()) != 0 || ::chmod(dir.c_str(), 0700) != 0) {
    return io_error("cannot move " + names[0] + " up in", dir);
  }
  return true;  // private at the top, as every tree yeet makes (docs/security.md)
}

Expected<Leftovers> commit_tree(const std::string& staging, const std::string& destination) {
  EZPZ_TRY_ASSIGN(const auto old, swap_tree(staging, destination));
  Leftovers left;
  if (old.empty()) {
    return left;
  }
  if (auto gone = remove_tree(old); !gone) {
    left.push_back(gone.error().message);
  }
  return left;
}

Expected<std::string> swap_tree(const std::string& staging, const std::string& destination) {
  struct stat st {};
  if (::lstat(destination.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return io_error("cannot stat", destination);
    }
    if (::rename(staging.c_str(), destination.c_str()) != 0) {
      return io_error("cannot move the new tree to", destination);
    }
    return std::string();
  }
  std::string old = staging;  // after the exchange it holds the previous tree
  if (::syscall(SYS_renameat2, AT_FDCWD, staging.c_str(), AT_FDCWD, destination.c_str(), RENAME_EXCHANGE) != 0) {
    // No atomic exchange (old kernel or filesystem): move the old tree aside first. A run
    // killed in between leaves the .old, which the next run or the watcher moves back.
    old = staging + ".old";
    if (::rename(destination.c_str(), old.c_str()) != 0) {
      return io_error("cannot move aside", destination);
    }
    if (::rename(staging.c_str(), destination.c_str()) != 0) {
      auto e = io_error("cannot move the new tree to", destination);
      if (::rename(old.c_str(), destination.c_str()) != 0) {
        return failure(e.message + "; the previous tree is left at " + old +
                       " (cannot move it back: " + std::strerror(errno) + ")");
      }
      return e;
    }
  }
  return old;
}

std::string unused_beside(const std::string& path) {
  std::string name = path + ".ezpz-new";
  struct stat st {};
  for (int n = 1; ::lstat(name.c_str(), &st) == 0; ++n) {
    name = path + ".ezpz-new." + std::to_string(n);
  }
  return name;
}

Expected<void> replace_file(const std::string& path, const std::string& text, mode_t mode) {
  const std::string tmp = path + ".ezpz-new";
  ::unlink(tmp.c_str());
  OwnedFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 07777));
  if (!fd.valid()) {
    return io_error("cannot create", tmp);
  }
  ScopeGuard remove_tmp([&tmp] { ::unlink(tmp.c_str()); });
  if (!write_all(fd.get(), text.data(), text.size())) {
    return io_error("cannot write", tmp);
  }
  ::fchmod(fd.get(), mode & 07777);
  if (!fd.close() || ::rename(tmp.c_str(), path.c_str()) != 0) {
    return io_error("cannot replace", path);
  }
  remove_tmp.dismiss();
  return {};
}

bool is_empty_dir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return false;
  }
  bool empty = true;
  while (const dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      empty = false;
      break;
    }
  }
  ::closedir(d);
  return empty;
}

}  // namespace ezpz::sys
