#include "sys/fs/clone.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <set>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/fs/incremental.hpp"
#include "sys/fs/remove.hpp"
#include "sys/fs/spare.hpp"
#include "sys/fs/tree.hpp"
#include "sys/os/fd_io.hpp"

namespace ezpz::sys {
namespace {

/// What clone_dir needs besides the two directories: the names it skips, the roots' paths
/// (named in errors), and when it checks the copy as it goes, the manifest and what it found.
struct Cloning {
  const std::vector<std::string>& ignore;
  const std::string& from_root;
  const std::string& to_root;
  DirModes& narrowed;
  const core::Manifest* expect = nullptr;  ///< each entry compared with it (stat, as held_manifest does)
  std::size_t seen = 0;                    ///< entries found in `expect`
  std::string diverged;                    ///< the first difference ("PATH changed", "PATH is new")
  uid_t me = ::geteuid();
};

/// Whether `name` (in the directory `rel`) is cloned: not an ignored name, nor a manifest file at the top.
bool cloned(const Cloning& c, const std::string& rel, const std::string& name) {
  return name != "." && name != ".." && std::find(c.ignore.begin(), c.ignore.end(), name) == c.ignore.end() &&
         !(rel.empty() && not_tree(name));
}

/// The entry `path` (stat `st`, a symlink's `target`) against the manifest clone_dir checks with.
bool as_expected(Cloning& c, const std::string& path, const struct stat& st, const char* target) {
  if (c.expect == nullptr) {
    return true;
  }
  const auto s = stat_entry(st, target);
  auto it = c.expect->entries.find(path);
  if (it == c.expect->entries.end()) {
    c.diverged = path + " is new";
  } else if (!core::stat_matches(it->second, s)) {
    c.diverged = path + " changed";
  }
  ++c.seen;
  return c.diverged.empty();
}

/// The directory open at `to` gets the entries of the one open at `from` (relative path `rel`):
/// directories anew with their modes, symlinks anew, files as hard links. Through the two
/// directories' descriptors: one name looked up per entry, not its whole path.
Expected<void> clone_dir(int from, int to, const std::string& rel, Cloning& c) {
  const int listing = ::fcntl(from, F_DUPFD_CLOEXEC, 0);
  DIR* raw = listing < 0 ? nullptr : ::fdopendir(listing);
  if (raw == nullptr) {
    if (listing >= 0) {
      ::close(listing);
    }
    return io_error("cannot read directory", join_path(c.from_root, rel));
  }
  const std::unique_ptr<DIR, int (*)(DIR*)> dir(raw, &::closedir);
  while (const auto* e = ::readdir(dir.get())) {
    const std::string name = e->d_name;
    if (!cloned(c, rel, name)) {
      continue;
    }
    const auto path = rel.empty() ? name : rel + "/" + name;
    struct stat st {};
    if (::fstatat(from, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return io_error("cannot stat", join_path(c.from_root, path));
    }
    char target[4096] = {};
    const auto n = S_ISLNK(st.st_mode) ? ::readlinkat(from, name.c_str(), target, sizeof(target) - 1) : 0;
    target[n < 0 ? 0 : n] = '\0';
    if (!as_expected(c, path, st, target)) {
      return failure(c.diverged);
    }
    int rc = 0;
    if (S_ISDIR(st.st_mode)) {
      // Its mode exact, whatever the umask; one without owner rwx gets it until the caller is
      // done writing in the tree (restore_modes).
      const unsigned mode = st.st_mode & 07777;
      rc = ::mkdirat(to, name.c_str(), 0700);
      const OwnedFd sub_from(::openat(from, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      const OwnedFd sub_to(rc == 0 ? ::openat(to, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1);
      if (rc == 0 && (!sub_from.valid() || !sub_to.valid() || ::fchmod(sub_to.get(), mode | S_IRWXU) != 0)) {
        return io_error("cannot open directory", join_path(c.from_root, path));
      }
      if (rc == 0 && (mode & S_IRWXU) != S_IRWXU) {
        c.narrowed.emplace_back(path, mode);
      }
      if (rc == 0) {
        EZPZ_TRY(clone_dir(sub_from.get(), sub_to.get(), path, c));
      }
    } else if (S_ISLNK(st.st_mode)) {
      rc = n < 0 ? -1 : ::symlinkat(target, to, name.c_str());
      const struct timespec times[2] = {st.st_atim, st.st_mtim};  // a manifest records its mtime
      rc = rc == 0 ? ::utimensat(to, name.c_str(), times, AT_SYMLINK_NOFOLLOW) : rc;
    } else if (st.st_uid != c.me) {  // held_manifest refuses such a tree: never link one in
      return failure(join_path(c.from_root, path) + " belongs to another user: that tree is not reused");
    } else {
      rc = ::linkat(from, name.c_str(), to, name.c_str(), 0);
    }
    if (rc != 0) {
      return io_error("cannot build", join_path(c.to_root, path));
    }
  }
  return {};
}

Expected<DirModes> clone_into(const std::string& dst, const std::string& staging, Cloning& c) {
  const OwnedFd from(::open(dst.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  const OwnedFd to(::open(staging.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!from.valid() || !to.valid()) {
    return io_error("cannot open directory", from.valid() ? staging : dst);
  }
  EZPZ_TRY(clone_dir(from.get(), to.get(), "", c));
  return std::move(c.narrowed);
}

}  // namespace

std::string first_missing(const core::Manifest& m, const std::string& root) {
  for (const auto& [path, e] : m.entries) {
    struct stat st {};
    if (::lstat(join_path(root, path).c_str(), &st) != 0) {
      return path + " is missing";
    }
  }
  return "an entry is missing";
}

Expected<DirModes> clone_as_links(const std::string& dst, const core::Manifest& manifest, const std::string& staging) {
  DirModes narrowed;
  Cloning c{manifest.ignore, dst, staging, narrowed, nullptr, 0, {}, ::geteuid()};
  return clone_into(dst, staging, c);
}

Expected<void> restore_modes(const std::string& root, const DirModes& narrowed,
                             const std::vector<std::string>& except) {
  const std::set<std::string> skip(except.begin(), except.end());
  for (auto it = narrowed.rbegin(); it != narrowed.rend(); ++it) {  // deepest first
    if (skip.count(it->first) != 0) {
      continue;
    }
    const auto path = join_path(root, it->first);
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && ::chmod(path.c_str(), it->second) != 0) {
      return io_error("cannot set the mode of", path);
    }
  }
  return {};
}

namespace {

/// The copy at `dst` (its manifest `held`, read) cloned into `out`, checked in the same walk.
Expected<ClonedCopy> clone_checked_held(const std::string& dst, core::HeldManifest held, const std::string& out,
                                        double check_s) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  DirModes narrowed;
  Cloning c{held.manifest.ignore, dst, out, narrowed, &held.manifest, 0, {}, ::geteuid()};
  auto made = clone_into(dst, out, c);
  if (made && c.seen != held.manifest.entries.size()) {
    c.diverged = first_missing(held.manifest, out);
  }
  if (!made || !c.diverged.empty()) {
    (void)remove_tree(out);
    (void)::mkdir(out.c_str(), 0700);  // as it was given: empty
    if (c.diverged.empty()) {
      return made.error();
    }
    return needs_full_copy(dst + " is not the copy its manifest describes (" + c.diverged + ")");
  }
  return ClonedCopy{std::move(held), std::move(*made), check_s,
                    std::chrono::duration<double>(Clock::now() - start).count()};
}

/// The manifest the copy at `dst` holds (and it is this user's copy), the one the delta starts
/// from when `base_digest` is given.
Expected<core::HeldManifest> base_manifest(const std::string& dst, const std::string& base_digest) {
  auto held = read_manifest(dst);
  if (!held) {
    return needs_full_copy(held.error().message);
  }
  if (!base_digest.empty() && held->digest != base_digest) {
    return needs_full_copy("its manifest is not the one the delta starts from (it missed the last yeet)");
  }
  return held;
}

}  // namespace

Expected<ClonedCopy> clone_checked(const std::string& dst, const std::string& base_digest, const std::string& out) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  EZPZ_TRY_ASSIGN(auto held, base_manifest(dst, base_digest));
  return clone_checked_held(dst, std::move(held), out, std::chrono::duration<double>(Clock::now() - start).count());
}

Expected<ClonedCopy> ready_copy(const std::string& dst, const std::string& base_digest, const std::string& out) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  EZPZ_TRY_ASSIGN(auto held, base_manifest(dst, base_digest));
  if (!has_spare(dst)) {
    return clone_checked_held(dst, std::move(held), out, std::chrono::duration<double>(Clock::now() - start).count());
  }
  // 1. The copy checked on its own: a walk that links nothing.
  CopyInodes inodes;
  if (auto diverged = copy_divergence(dst, held.manifest, &inodes); !diverged.empty()) {
    return needs_full_copy(dst + " is not the copy its manifest describes (" + diverged + ")");
  }
  const auto checked = Clock::now();
  const auto check_s = std::chrono::duration<double>(checked - start).count();
  // 2. The spare brought up to it, or when it cannot be used, the copy cloned (checked again
  // as it is linked: what is linked is what was checked).
  EZPZ_TRY_ASSIGN(auto spare, take_spare(dst, held, out, &inodes));
  if (!spare) {
    return clone_checked_held(dst, std::move(held), out, check_s);
  }
  return ClonedCopy{std::move(held),
                    std::move(*spare),
                    check_s,
                    std::chrono::duration<double>(Clock::now() - checked).count(),
                    0,
                    true};
}

Expected<ClonedCopy> clone_held(const std::string& dst, const std::string& base_digest, const std::string& out) {
  if (::mkdir(out.c_str(), 0700) != 0) {  // private at the top, as every tree yeet makes
    return io_error("cannot create directory", out);
  }
  auto cloned = ready_copy(dst, base_digest, out);
  if (!cloned) {
    (void)remove_tree(out);
  }
  return cloned;
}

}  // namespace ezpz::sys
