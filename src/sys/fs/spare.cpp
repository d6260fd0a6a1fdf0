#include "sys/fs/spare.hpp"

#include <algorithm>
#include <cerrno>
#include <memory>
#include <set>
#include <unordered_map>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sys/fs/incremental.hpp"
#include "sys/fs/tree.hpp"
#include "sys/os/fd_io.hpp"
#include "sys/os/read_text.hpp"

namespace ezpz::sys {
namespace {

/// A spare checked against its manifest, which is `live` (what the copy holds) but for `diff`
/// (the spare's lines that differ, and live's paths it lacks): its walk's findings.
struct SpareCheck {
  const core::Manifest& live;
  const core::ManifestChanges& diff;
  std::set<std::string> lacks;       ///< diff.gone, for lookups
  DirModes narrowed;                 ///< directories opened up to owner rwx
  std::vector<std::string> ignored;  ///< names live's manifest ignores, found there: removed
  std::size_t seen = 0;
  std::string diverged;
  bool open_up = true;  ///< a spare's directories get owner rwx; a copy is never written to
  uid_t me = ::geteuid();
  CopyInodes* record = nullptr;       ///< the copy's walk: each file's inode, recorded
  const CopyInodes* known = nullptr;  ///< the spare's: a file with its copy's inode needs no stat

  /// What the spare's manifest says of `path` (nullptr: it has no such entry).
  [[nodiscard]] const core::ManifestEntry* expected(const std::string& path) const {
    if (auto it = diff.set.find(path); it != diff.set.end()) {
      return &it->second;
    }
    if (lacks.count(path) != 0) {
      return nullptr;
    }
    auto it = live.entries.find(path);
    return it == live.entries.end() ? nullptr : &it->second;
  }
  /// How many entries the spare's manifest lists.
  [[nodiscard]] std::size_t listed() const {
    const auto added = std::count_if(diff.set.begin(), diff.set.end(),
                                     [this](const auto& kv) { return live.entries.count(kv.first) == 0; });
    return live.entries.size() - diff.gone.size() + static_cast<std::size_t>(added);
  }
};

/// The entry `name` (in the directory open as `fd`, at `path`) against the spare's manifest.
bool check_entry(SpareCheck& c, int fd, const std::string& name, const std::string& path, struct stat& st) {
  if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    c.diverged = path + " cannot be read";
    return false;
  }
  char target[4096] = {};
  const auto n = S_ISLNK(st.st_mode) ? ::readlinkat(fd, name.c_str(), target, sizeof(target) - 1) : 0;
  target[n < 0 ? 0 : n] = '\0';
  const auto s = stat_entry(st, target);
  const auto* e = c.expected(path);
  if (st.st_uid != c.me || !(S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode) || S_ISREG(st.st_mode))) {
    c.diverged = path + " is not this user's file, directory or symlink";
  } else if (e == nullptr) {
    c.diverged = path + " is new";
  } else if (!core::stat_matches(*e, s)) {
    c.diverged = path + " changed";
  } else if (c.record != nullptr && e->type == 'f') {
    (*c.record)[e] = st.st_ino;
  }
  ++c.seen;
  return c.diverged.empty();
}

/// The spare's entry `d` at `path`, when it is a file both manifests list alike and the copy's
/// walk recorded inodes (`known`): it must be the copy's checked file itself (the same inode;
/// the spare is made of the copy's files), which makes it what the manifest says. True when
/// that settled it, `c.diverged` set when it is another file.
bool settled_by_inode(SpareCheck& c, const dirent& d, const std::string& path) {
  if (c.known == nullptr || d.d_type != DT_REG || c.diff.set.count(path) != 0 || c.lacks.count(path) != 0) {
    return false;
  }
  auto e = c.live.entries.find(path);
  if (e == c.live.entries.end() || e->second.type != 'f') {
    return false;
  }
  auto ino = c.known->find(&e->second);
  if (ino == c.known->end() || ino->second != d.d_ino) {
    c.diverged = path + " is not the copy's file";
  }
  ++c.seen;
  return true;
}

/// Walk the spare's directory open as `fd` (relative path `rel`), each entry checked; a
/// directory without owner rwx gets it (recorded) before it is read.
Expected<void> check_dir(int fd, const std::string& rel, SpareCheck& c) {
  const int listing = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  DIR* raw = listing < 0 ? nullptr : ::fdopendir(listing);
  if (raw == nullptr) {
    if (listing >= 0) {
      ::close(listing);
    }
    c.diverged = (rel.empty() ? std::string(".") : rel) + " cannot be read";
    return {};
  }
  const std::unique_ptr<DIR, int (*)(DIR*)> dir(raw, &::closedir);
  while (const auto* d = ::readdir(dir.get())) {
    const std::string name = d->d_name;
    if (name == "." || name == ".." || (rel.empty() && not_tree(name))) {
      continue;
    }
    const auto path = rel.empty() ? name : rel + "/" + name;
    if (std::find(c.live.ignore.begin(), c.live.ignore.end(), name) != c.live.ignore.end()) {
      c.ignored.push_back(path);  // what running python made there (__pycache__): a clone has none
      continue;
    }
    if (settled_by_inode(c, *d, path)) {
      if (!c.diverged.empty()) {
        return {};
      }
      continue;
    }
    struct stat st {};
    if (!check_entry(c, fd, name, path, st)) {
      return {};
    }
    if (!S_ISDIR(st.st_mode)) {
      continue;
    }
    const unsigned mode = st.st_mode & 07777;
    if (c.open_up && (mode & S_IRWXU) != S_IRWXU) {
      if (::fchmodat(fd, name.c_str(), mode | S_IRWXU, 0) != 0) {
        return io_error("cannot open up", path);
      }
      c.narrowed.emplace_back(path, mode);
    }
    const OwnedFd sub(::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub.valid()) {
      c.diverged = path + " cannot be read";
      return {};
    }
    EZPZ_TRY(check_dir(sub.get(), path, c));
    if (!c.diverged.empty()) {
      return {};
    }
  }
  return {};
}

/// The spare's entry at `e.path` under `out` made what the copy's is (`e`, live's entry): a
/// directory kept or made (its mode, owner rwx added while filled: `narrowed`), a symlink
/// made anew with its times, a file hard-linked from `dst`.
Expected<void> mirror_entry(const std::string& dst, const std::string& out, const core::ManifestEntry& e,
                            DirModes& narrowed, const CopyInodes* known) {
  const auto from = join_path(dst, e.path);
  const auto to = join_path(out, e.path);
  struct stat there {};
  const bool exists = ::lstat(to.c_str(), &there) == 0;
  if (e.type == 'd') {
    if (exists && !S_ISDIR(there.st_mode)) {
      EZPZ_TRY(remove_tree(to));
    }
    if ((!exists || !S_ISDIR(there.st_mode)) && ::mkdir(to.c_str(), 0700) != 0) {
      return io_error("cannot create directory", to);
    }
    const OwnedFd dir(::open(to.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir.valid() || ::fchmod(dir.get(), e.mode | S_IRWXU) != 0) {
      return io_error("cannot set the mode of", to);
    }
    std::erase_if(narrowed, [&e](const auto& d) { return d.first == e.path; });
    if ((e.mode & S_IRWXU) != S_IRWXU) {
      narrowed.emplace_back(e.path, e.mode);
    }
    return {};
  }
  EZPZ_TRY(exists ? remove_tree(to) : Expected<void>());
  // What is linked over is still what the copy's check found (the manifest's entry, this
  // user's, and for a file the inode that check recorded), or the spare is not used.
  EZPZ_TRY_ASSIGN(const auto src, stat_at(dst, e.path));
  const auto now = stat_entry(src);
  const bool file = S_ISREG(src.st.st_mode);
  auto ino = known != nullptr ? known->find(&e) : CopyInodes::const_iterator();
  if (src.st.st_uid != ::geteuid() || !core::stat_matches(e, now) || (e.type == 'f' && !file) ||
      (file && known != nullptr && (ino == known->end() || ino->second != src.st.st_ino))) {
    return failure(from + " is no longer what the copy's check found");
  }
  if (e.type == 'l') {
    return make_symlink(src.link_target, to, src.st);
  }
  if (::link(from.c_str(), to.c_str()) != 0) {
    return io_error("cannot link", to);
  }
  return {};
}

/// The checked spare at `out` made the copy `live` describes: what only it has removed
/// (deepest first), then each entry it has otherwise or lacks linked over (parents first).
Expected<void> sync_from(const std::string& dst, const std::string& out, const core::Manifest& live,
                         const core::ManifestChanges& diff, DirModes& narrowed, const CopyInodes* known) {
  for (auto it = diff.set.rbegin(); it != diff.set.rend(); ++it) {
    if (live.entries.count(it->first) == 0) {
      EZPZ_TRY(remove_tree(join_path(out, it->first)));
    }
  }
  std::set<std::string> differs(diff.gone.begin(), diff.gone.end());
  for (const auto& [path, e] : diff.set) {
    if (live.entries.count(path) != 0) {
      differs.insert(path);
    }
  }
  for (const auto& path : differs) {
    EZPZ_TRY(mirror_entry(dst, out, live.entries.at(path), narrowed, known));
  }
  return {};
}

/// Remove what is at dst's spare, when it is this user's (another user's is never touched).
Leftovers drop_spare(const std::string& dst) {
  const auto spare = core::spare_path(dst);
  struct stat st {};
  if (::lstat(spare.c_str(), &st) != 0 || st.st_uid != ::geteuid()) {
    return {};
  }
  if (auto gone = remove_tree(spare); !gone) {
    return {gone.error().message};
  }
  return {};
}

/// `from` renamed to `to` only where nothing is (never over another user's entry).
bool rename_new(const std::string& from, const std::string& to) {
  if (::syscall(SYS_renameat2, AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) {
    return true;
  }
  struct stat st {};
  return (errno == EINVAL || errno == ENOSYS) && ::lstat(to.c_str(), &st) != 0 && errno == ENOENT &&
         ::rename(from.c_str(), to.c_str()) == 0;
}

/// A twin of the copy at `dst` (its manifest included) built at `work`, then made dst's spare.
bool make_twin(const std::string& dst, const std::string& work) {
  auto held = read_manifest(dst);
  if (!held || ::mkdir(work.c_str(), 0700) != 0) {
    return false;
  }
  auto narrowed = clone_as_links(dst, held->manifest, work);
  const std::string manifest(core::kManifestName);  // never written in place: shared
  const bool made = narrowed && restore_modes(work, *narrowed, {}) &&
                    ::link(join_path(dst, manifest).c_str(), join_path(work, manifest).c_str()) == 0 &&
                    rename_new(work, core::spare_path(dst));
  if (!made) {
    (void)remove_tree(work);
  }
  return made;
}

/// The spare moved to `out` (`claimed`: what lstat said of it before) checked against its own
/// manifest and made the copy `held` describes; nullopt when it cannot be used.
Expected<std::optional<DirModes>> bring_up(const std::string& dst, const core::HeldManifest& held,
                                           const std::string& out, const struct stat& claimed,
                                           const CopyInodes* known) {
  const std::optional<DirModes> unusable;
  struct stat moved {};
  auto text = read_whole(join_path(out, std::string(core::kManifestName)));
  if (::lstat(out.c_str(), &moved) != 0 || moved.st_ino != claimed.st_ino || moved.st_dev != claimed.st_dev || !text) {
    return unusable;
  }
  // Its manifest against the copy's: only the lines that differ read. Another header (other
  // ignored names) or a tree far from the copy's: not worth syncing.
  auto diff = core::manifest_changes(held.text, *text);
  if (!diff || diff->whole || diff->set.size() + diff->gone.size() > held.manifest.entries.size() / 4 + 64) {
    return unusable;
  }
  // Every entry as its manifest says (stat, as a copy is checked), this user's.
  SpareCheck c{held.manifest, *diff, {diff->gone.begin(), diff->gone.end()}, {}, {}, 0, {}, true, ::geteuid(),
               nullptr,       known};
  // Private at the top, as every tree yeet makes (the copy it was may have been opened up).
  const OwnedFd top(::open(out.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!top.valid() || ::fchmod(top.get(), 0700) != 0) {
    return unusable;
  }
  EZPZ_TRY(check_dir(top.get(), "", c));
  if (!c.diverged.empty() || c.seen != c.listed()) {
    return unusable;
  }
  // What a clone would not have (top files, ignored names), then what differs from the copy.
  for (const auto name : {core::kManifestName, core::kFailedNodesName, core::kYeetMarkerName}) {
    (void)::unlinkat(top.get(), std::string(name).c_str(), 0);
  }
  for (const auto& path : c.ignored) {
    EZPZ_TRY(remove_tree(join_path(out, path)));
  }
  EZPZ_TRY(sync_from(dst, out, held.manifest, *diff, c.narrowed, known));
  std::sort(c.narrowed.begin(), c.narrowed.end());  // parents first: restore_modes goes deepest first
  return std::optional<DirModes>(std::move(c.narrowed));
}

}  // namespace

std::string copy_divergence(const std::string& dst, const core::Manifest& m, CopyInodes* inodes) {
  const core::ManifestChanges none;
  SpareCheck c{m, none, {}, {}, {}, 0, {}, false, ::geteuid(), inodes, nullptr};
  const OwnedFd top(::open(dst.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!top.valid()) {
    return "it cannot be read";
  }
  if (auto walked = check_dir(top.get(), "", c); !walked) {
    return walked.error().message;
  }
  if (c.diverged.empty() && c.seen != m.entries.size()) {
    return first_missing(m, dst);
  }
  return c.diverged;
}

bool has_spare(const std::string& dst) {
  struct stat st {};
  return ::lstat(core::spare_path(dst).c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid();
}

Expected<std::optional<DirModes>> take_spare(const std::string& dst, const core::HeldManifest& held,
                                             const std::string& out, const CopyInodes* known) {
  // 1. Moved to the work name (a spare of this user's only: another user's is never touched).
  const auto spare = core::spare_path(dst);
  struct stat st {};
  if (::lstat(spare.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() ||
      ::rename(spare.c_str(), out.c_str()) != 0) {
    return std::optional<DirModes>();
  }
  // 2. Checked and brought up to the copy; whatever goes wrong, `out` is left empty.
  // A spare that cannot be brought up (an I/O error on the way) is one more unusable spare: the
  // copy is cloned instead.
  auto made = bring_up(dst, held, out, st, known);
  if (made && *made) {
    return made;
  }
  (void)remove_tree(out);
  if (::mkdir(out.c_str(), 0700) != 0) {
    return io_error("cannot create directory", out);
  }
  return std::optional<DirModes>();
}

Settled settle_spare(const std::string& dst, const std::string& previous, core::Previous how,
                     const std::string& twin_work) {
  Settled s;
  s.left = drop_spare(dst);
  struct stat st {};
  if (::lstat(core::spare_path(dst).c_str(), &st) == 0) {  // another user's name there: no spare
    s.remove = previous;
    return s;
  }
  if (how == core::Previous::keep_as_spare && !previous.empty() && rename_new(previous, core::spare_path(dst))) {
    return s;
  }
  s.remove = previous;
  if (::lstat(join_path(dst, std::string(core::kManifestName)).c_str(), &st) == 0) {
    (void)make_twin(dst, twin_work);
  }
  return s;
}

}  // namespace ezpz::sys
