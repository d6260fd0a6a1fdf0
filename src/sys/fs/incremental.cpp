#include "sys/fs/incremental.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <set>

#include <dirent.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/strings.hpp"
#include "sys/fs/file_delta.hpp"
#include "sys/fs/tree.hpp"
#include "sys/os/fd_io.hpp"
#include "sys/os/read_text.hpp"

namespace ezpz::sys {
namespace {

/// This copy cannot take the delta: the head sends it the whole tree instead.
Error needs_full_copy(const std::string& why) {
  return Error{ExitCode::failure, std::string(core::kNeedsFullCopy) + why, ErrorKind::needs_full_copy};
}

/// Files that live in a destination but are not part of its tree.
const std::vector<std::string> kNotTree = {std::string(core::kManifestName), std::string(core::kFailedNodesName),
                                           std::string(core::kYeetMarkerName)};
/// Changed files at least this big are sent as a librsync delta when it is smaller.
constexpr long long kDeltaMinSize = 64 * 1024;

std::string join(const std::string& a, const std::string& b) {
  return a + "/" + b;
}

Error io_error(const std::string& what, const std::string& path) {
  return failure(what + " " + path + ": " + std::strerror(errno));
}

long long mtime_ns(const struct stat& st) {
  return static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
}

Expected<void> make_parents(const std::string& root, const std::string& rel) {
  for (auto slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', slash + 1)) {
    const auto dir = join(root, rel.substr(0, slash));
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return io_error("cannot create directory", dir);
    }
  }
  return {};
}

}  // namespace

std::string text_sha256(std::string_view text) {
  sha256_ctx ctx;
  sha256_init(&ctx);
  sha256_update(&ctx, text.size(), reinterpret_cast<const std::uint8_t*>(text.data()));  // NOLINT
  unsigned char sum[SHA256_DIGEST_SIZE];
  sha256_digest(&ctx, sizeof(sum), sum);
  return core::to_hex(sum, sizeof(sum));
}

Expected<std::string> file_sha256(const std::string& path) {
  EZPZ_TRY_ASSIGN(auto opened, open_regular(path));
  const int fd = opened.get();
  sha256_ctx ctx;
  sha256_init(&ctx);
  std::vector<unsigned char> buf(1 << 20);
  ssize_t n;
  while ((n = ::read(fd, buf.data(), buf.size())) > 0) {
    sha256_update(&ctx, static_cast<std::size_t>(n), buf.data());
  }
  if (n < 0) {
    return io_error("cannot read", path);
  }
  unsigned char sum[SHA256_DIGEST_SIZE];
  sha256_digest(&ctx, sizeof(sum), sum);
  return core::to_hex(sum, sizeof(sum));
}

core::StatEntry stat_entry(const TreeEntry& e) {
  core::StatEntry s;
  s.type = S_ISDIR(e.st.st_mode) ? 'd' : S_ISLNK(e.st.st_mode) ? 'l' : 'f';
  s.mode = e.st.st_mode & 07777;
  s.size = s.type == 'f' ? static_cast<unsigned long long>(e.st.st_size) : 0;
  s.mtime_ns = mtime_ns(e.st);
  s.link = e.link_target;
  return s;
}

Expected<std::map<std::string, core::StatEntry>> stat_tree(const std::string& root,
                                                           const std::vector<std::string>& ignore) {
  std::map<std::string, core::StatEntry> out;
  std::string foreign;  // a tree with another user's entry in it is not ours to reuse
  const uid_t me = ::geteuid();
  EZPZ_TRY(walk_tree(root, ignore, [&](const TreeEntry& e) {
    if (e.st.st_uid != me) {
      foreign = e.path;
      return false;
    }
    if (e.path.find('/') != std::string::npos ||
        std::find(kNotTree.begin(), kNotTree.end(), e.path) == kNotTree.end()) {
      out[e.path] = stat_entry(e);
    }
    return true;
  }));
  if (!foreign.empty()) {
    return failure(join(root, foreign) + " belongs to another user: that tree is not reused");
  }
  return out;
}

Expected<core::Manifest> build_manifest(const std::string& root, const core::Manifest* reuse,
                                        const std::string& source_root, const std::vector<std::string>& ignore) {
  core::Manifest m;
  m.ignore = ignore;
  std::optional<Error> error;
  auto r = walk_tree(root, ignore, [&](const TreeEntry& e) {
    if (e.path.find('/') == std::string::npos &&
        std::find(kNotTree.begin(), kNotTree.end(), e.path) != kNotTree.end()) {
      return true;
    }
    const auto s = stat_entry(e);
    core::ManifestEntry entry;
    entry.path = e.path;
    entry.type = s.type;
    entry.mode = s.mode;
    entry.size = s.size;
    entry.mtime_ns = s.mtime_ns;
    entry.link = s.link;
    if (s.type == 'f') {
      const core::ManifestEntry* before = nullptr;
      if (reuse != nullptr) {
        auto it = reuse->entries.find(e.path);
        before = it == reuse->entries.end() ? nullptr : &it->second;
      }
      if (before != nullptr && before->type == 'f' && before->size == s.size && before->mtime_ns == s.mtime_ns &&
          before->mode == s.mode && !before->digest.empty()) {
        entry.digest = before->digest;
      } else {
        auto digest = file_sha256(join(root, e.path));
        if (!digest) {
          error = digest.error();
          return false;
        }
        entry.digest = *digest;
      }
      struct stat src {};
      if (!source_root.empty() && ::lstat(join(source_root, e.path).c_str(), &src) == 0 && S_ISREG(src.st_mode)) {
        entry.src_size = static_cast<unsigned long long>(src.st_size);
        entry.src_mtime_ns = mtime_ns(src);
      }
    }
    m.entries[e.path] = std::move(entry);
    return true;
  });
  if (error) {
    return *error;
  }
  if (!r) {
    return r.error();
  }
  return m;
}

Expected<core::HeldManifest> held_manifest(const std::string& root) {
  struct stat top {};
  if (::lstat(root.c_str(), &top) == 0 && top.st_uid != ::geteuid()) {
    return failure(root + " belongs to another user: that tree is not reused");
  }
  auto text = read_whole(join(root, std::string(core::kManifestName)), std::size_t(1) << 30);
  if (!text) {
    return failure("no " + std::string(core::kManifestName) + " in " + root + " (no complete yeet there yet)");
  }
  auto m = core::decode_manifest(*text);
  if (!m) {
    return failure(root + "/" + std::string(core::kManifestName) + ": " + m.error().message);
  }
  EZPZ_TRY_ASSIGN(auto tree, stat_tree(root, m->ignore));
  if (auto diverged = core::tree_divergence(*m, tree); !diverged.empty()) {
    return failure(root + " is not the copy its manifest describes (" + diverged + ")");
  }
  return core::HeldManifest{std::move(*m), text_sha256(*text)};
}

Expected<core::HeldManifest> write_manifest(const std::string& root, const core::Manifest* reuse,
                                            const std::string& source_root, const std::vector<std::string>& ignore) {
  EZPZ_TRY_ASSIGN(auto m, build_manifest(root, reuse, source_root, ignore));
  auto text = core::encode_manifest(m);
  EZPZ_TRY(replace_file(join(root, std::string(core::kManifestName)), text, 0644));
  return core::HeldManifest{std::move(m), text_sha256(text)};
}

Expected<core::ChangeEstimate> estimate_changes(const std::string& source, const std::vector<std::string>& excludes,
                                                const core::Manifest& m) {
  core::ChangeEstimate est;
  std::set<std::string> seen;
  EZPZ_TRY(walk_tree(source, excludes, [&](const TreeEntry& e) {
    seen.insert(e.path);
    auto it = m.entries.find(e.path);
    const auto s = stat_entry(e);
    const bool same_kind = it != m.entries.end() && it->second.type == s.type && it->second.mode == s.mode;
    if (!S_ISREG(e.st.st_mode)) {  // a directory, or a symlink (what it points at), as the copy has it
      if (!same_kind || (s.type == 'l' && it->second.link != s.link)) {
        ++est.files;
        est.changed.push_back(e.path);
      }
      return true;
    }
    // A file: as it was when the last copy was made (the copy itself may have been patched).
    if (!same_kind || it->second.src_size != s.size || it->second.src_mtime_ns != s.mtime_ns) {
      ++est.files;
      est.bytes += s.size;
      est.changed.push_back(e.path);
    }
    return true;
  }));
  for (const auto& [path, e] : m.entries) {
    if (seen.count(path) == 0) {
      ++est.removed;
      est.gone.push_back(path);
    }
  }
  return est;
}

Expected<core::BundleStats> make_bundle(const std::string& old_root, const core::Manifest& old,
                                        const std::string& old_digest, const std::string& new_root,
                                        const core::Manifest& now, const std::string& now_digest,
                                        const std::string& bundle) {
  const auto diff = core::diff_manifests(old, now);
  core::BundleStats stats;
  core::DeltaHeader header{old_digest, now_digest, {}, {}};
  const std::string delta_dir = join(bundle, std::string(core::kDeltaDirName));
  if (::mkdir(bundle.c_str(), 0755) != 0 || ::mkdir(delta_dir.c_str(), 0755) != 0) {
    return io_error("cannot create", delta_dir);
  }
  for (const auto& path : diff.removed) {
    // A directory's contents are removed with it; listing them too is harmless.
    header.removed.push_back(path);
    ++stats.removed;
  }
  std::vector<std::string> send = diff.added;
  send.insert(send.end(), diff.changed.begin(), diff.changed.end());
  std::sort(send.begin(), send.end());  // parents before children
  for (const auto& path : send) {
    const auto& e = now.entries.at(path);
    const auto from = join(new_root, path);
    const auto to = join(bundle, path);
    EZPZ_TRY(make_parents(bundle, path));
    auto before = old.entries.find(path);
    if (e.type == 'f' && before != old.entries.end() && before->second.type == 'f' &&
        static_cast<long long>(e.size) >= kDeltaMinSize) {
      const auto name = std::to_string(header.deltas.size());
      const auto delta_path = join(delta_dir, name);
      auto size = make_delta(join(old_root, path), from, delta_path);
      if (size && *size < e.size) {
        header.deltas[path] = name;
        ++stats.deltas;
        stats.delta_bytes += *size;
        continue;
      }
      ::unlink(delta_path.c_str());  // not smaller (or not possible): send it whole
    }
    ++stats.files;
    if (e.type == 'd') {
      if (::mkdir(to.c_str(), e.mode) != 0 && errno != EEXIST) {
        return io_error("cannot create directory", to);
      }
    } else if (e.type == 'l') {
      if (::symlink(e.link.c_str(), to.c_str()) != 0) {
        return io_error("cannot create symlink", to);
      }
    } else {
      stats.bytes += e.size;
      if (::link(from.c_str(), to.c_str()) != 0) {
        return io_error("cannot link", from);
      }
    }
  }
  const auto manifest = std::string(core::kManifestName);
  if (::link(join(new_root, manifest).c_str(), join(bundle, manifest).c_str()) != 0) {
    return io_error("cannot link", join(new_root, manifest));
  }
  EZPZ_TRY(replace_file(join(delta_dir, "header.json"), core::encode_delta_header(header), 0644));
  return stats;
}

bool is_bundle(const std::string& dir) {
  struct stat st {};
  return ::lstat(join(join(dir, std::string(core::kDeltaDirName)), "header.json").c_str(), &st) == 0 &&
         S_ISREG(st.st_mode);
}

namespace {

/// What clone_dir needs besides the two directories: the names it skips, and the roots' paths
/// (named in errors).
struct Cloning {
  const std::vector<std::string>& ignore;
  const std::string& from_root;
  const std::string& to_root;
  DirModes& narrowed;
  uid_t me = ::geteuid();
};

/// The directory open at `to` gets the entries of the one open at `from` (relative path `rel`):
/// directories anew with their modes, symlinks anew, files as hard links. Through the two
/// directories' descriptors: one name looked up per entry, not its whole path.
Expected<void> clone_dir(int from, int to, const std::string& rel, const Cloning& c) {
  const int listing = ::dup(from);
  DIR* raw = listing < 0 ? nullptr : ::fdopendir(listing);
  if (raw == nullptr) {
    if (listing >= 0) {
      ::close(listing);
    }
    return io_error("cannot read directory", join(c.from_root, rel));
  }
  const std::unique_ptr<DIR, int (*)(DIR*)> dir(raw, &::closedir);
  while (const auto* e = ::readdir(dir.get())) {
    const std::string name = e->d_name;
    if (name == "." || name == ".." || std::find(c.ignore.begin(), c.ignore.end(), name) != c.ignore.end() ||
        (rel.empty() && std::find(kNotTree.begin(), kNotTree.end(), name) != kNotTree.end())) {
      continue;
    }
    const auto path = rel.empty() ? name : rel + "/" + name;
    struct stat st {};
    if (::fstatat(from, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return io_error("cannot stat", join(c.from_root, path));
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
        return io_error("cannot open directory", join(c.from_root, path));
      }
      if (rc == 0 && (mode & S_IRWXU) != S_IRWXU) {
        c.narrowed.emplace_back(path, mode);
      }
      if (rc == 0) {
        EZPZ_TRY(clone_dir(sub_from.get(), sub_to.get(), path, c));
      }
    } else if (S_ISLNK(st.st_mode)) {
      char target[4096];
      const auto n = ::readlinkat(from, name.c_str(), target, sizeof(target) - 1);
      target[n < 0 ? 0 : n] = '\0';
      rc = n < 0 ? -1 : ::symlinkat(target, to, name.c_str());
      const struct timespec times[2] = {st.st_atim, st.st_mtim};  // a manifest records its mtime
      rc = rc == 0 ? ::utimensat(to, name.c_str(), times, AT_SYMLINK_NOFOLLOW) : rc;
    } else if (st.st_uid != c.me) {  // held_manifest refuses such a tree: never link one in
      return failure(join(c.from_root, path) + " belongs to another user: that tree is not reused");
    } else {
      rc = ::linkat(from, name.c_str(), to, name.c_str(), 0);
    }
    if (rc != 0) {
      return io_error("cannot build", join(c.to_root, path));
    }
  }
  return {};
}

}  // namespace

Expected<DirModes> clone_as_links(const std::string& dst, const core::Manifest& manifest, const std::string& staging) {
  const OwnedFd from(::open(dst.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  const OwnedFd to(::open(staging.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!from.valid() || !to.valid()) {
    return io_error("cannot open directory", from.valid() ? staging : dst);
  }
  DirModes narrowed;
  EZPZ_TRY(clone_dir(from.get(), to.get(), "", Cloning{manifest.ignore, dst, staging, narrowed}));
  return narrowed;
}

Expected<void> restore_modes(const std::string& root, const DirModes& narrowed,
                             const std::vector<std::string>& except) {
  const std::set<std::string> skip(except.begin(), except.end());
  for (auto it = narrowed.rbegin(); it != narrowed.rend(); ++it) {  // deepest first
    if (skip.count(it->first) != 0) {
      continue;
    }
    const auto path = join(root, it->first);
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && ::chmod(path.c_str(), it->second) != 0) {
      return io_error("cannot set the mode of", path);
    }
  }
  return {};
}

namespace {

/// The bundle's new and changed entries renamed into `staging` over what was there; each path
/// added to `touched`.
Expected<void> move_bundle_entries(const std::string& bundle_dir, const std::string& staging,
                                   std::vector<std::string>& touched) {
  std::optional<Error> error;
  auto moved = walk_tree(bundle_dir, {std::string(core::kDeltaDirName)}, [&](const TreeEntry& e) {
    if (e.path != core::kManifestName) {
      touched.push_back(e.path);
    }
    const auto to = join(staging, e.path);
    struct stat there {};
    const bool exists = ::lstat(to.c_str(), &there) == 0;
    if (S_ISDIR(e.st.st_mode)) {
      if (exists && S_ISDIR(there.st_mode)) {
        ::chmod(to.c_str(), e.st.st_mode & 07777);  // a directory of staging's own: safe to change
        return true;
      }
      if (auto gone = exists ? remove_tree(to) : Expected<void>(); !gone) {
        error = gone.error();
        return false;
      }
      if (::mkdir(to.c_str(), e.st.st_mode & 07777) != 0) {
        error = io_error("cannot create directory", to);
        return false;
      }
      return true;
    }
    if (auto gone = exists ? remove_tree(to) : Expected<void>(); !gone) {
      error = gone.error();
      return false;
    }
    if (::rename(join(bundle_dir, e.path).c_str(), to.c_str()) != 0) {
      error = io_error("cannot move into place", to);
      return false;
    }
    return true;
  });
  if (error) {
    return *error;
  }
  if (!moved) {
    return moved.error();
  }
  return {};
}

/// Each librsync delta of the bundle applied to this node's file, checked against the new
/// manifest's digest, with its mode and mtime, renamed into `staging`.
Expected<void> apply_deltas(const core::DeltaHeader& header, const core::Manifest& now, const std::string& dst,
                            const std::string& delta_dir, const std::string& staging) {
  for (const auto& [path, name] : header.deltas) {
    auto entry = now.entries.find(path);
    if (entry == now.entries.end() || entry->second.type != 'f') {
      return failure("the delta patches " + path + ", which its manifest does not list as a file");
    }
    const auto to = join(staging, path);
    const auto tmp = to + ".ezpz-patch";
    if (auto patched = apply_delta(join(dst, path), join(delta_dir, name), tmp); !patched) {
      ::unlink(tmp.c_str());
      return patched.error();
    }
    auto digest = file_sha256(tmp);
    if (!digest || *digest != entry->second.digest) {
      ::unlink(tmp.c_str());
      return needs_full_copy("patching " + path + " did not give the expected content");
    }
    const timespec times[2] = {{0, UTIME_OMIT},
                               {static_cast<time_t>(entry->second.mtime_ns / 1000000000LL),
                                static_cast<long>(entry->second.mtime_ns % 1000000000LL)}};
    if (::chmod(tmp.c_str(), entry->second.mode) != 0 || ::utimensat(AT_FDCWD, tmp.c_str(), times, 0) != 0 ||
        ::rename(tmp.c_str(), to.c_str()) != 0) {
      ::unlink(tmp.c_str());
      return io_error("cannot move into place", to);
    }
  }
  return {};
}

/// What lstat says of each of `paths` under `root` that exists (a symlink's target read too).
std::map<std::string, core::StatEntry> stat_paths(const std::string& root, const std::vector<std::string>& paths) {
  std::map<std::string, core::StatEntry> out;
  for (const auto& path : paths) {
    if (auto e = stat_at(root, path)) {
      out[path] = stat_entry(*e);
    }
  }
  return out;
}

/// Whether the bundle changes nothing: the same manifest, nothing removed, sent or patched.
bool changes_nothing(const core::DeltaHeader& header, const std::string& bundle_dir) {
  if (header.base_digest != header.new_digest || !header.removed.empty() || !header.deltas.empty()) {
    return false;
  }
  bool other = false;
  auto listed = walk_tree(bundle_dir, {std::string(core::kDeltaDirName)}, [&](const TreeEntry& e) {
    other = e.path != core::kManifestName;
    return !other;
  });
  return listed && !other;
}

}  // namespace

Expected<ClonedCopy> clone_held(const std::string& dst, const std::string& base_digest, const std::string& out) {
  const auto start = std::chrono::steady_clock::now();
  auto held = held_manifest(dst);
  if (!held || held->digest != base_digest) {
    return failure("not the copy announced");
  }
  const auto checked = std::chrono::steady_clock::now();
  if (::mkdir(out.c_str(), 0700) != 0) {
    return io_error("cannot create directory", out);
  }
  auto narrowed = clone_as_links(dst, held->manifest, out);
  if (!narrowed) {
    (void)remove_tree(out);
    return narrowed.error();
  }
  const auto done = std::chrono::steady_clock::now();
  return ClonedCopy{std::move(*held), std::move(*narrowed), std::chrono::duration<double>(checked - start).count(),
                    std::chrono::duration<double>(done - checked).count()};
}

Expected<core::BundleApplied> apply_bundle(const std::string& bundle_dir, const std::string& dst,
                                           const std::string& staging, const ClonedCopy* cloned) {
  core::StepTimes steps;
  auto t = std::chrono::steady_clock::now();
  auto step = [&](const char* name) {
    const auto now = std::chrono::steady_clock::now();
    steps.emplace_back(name, std::chrono::duration<double>(now - t).count());
    t = now;
  };
  const auto delta_dir = join(bundle_dir, std::string(core::kDeltaDirName));
  EZPZ_TRY_ASSIGN(auto text, read_whole(join(delta_dir, "header.json"), 64U << 20));
  EZPZ_TRY_ASSIGN(auto header, core::decode_delta_header(text));
  // 1. This node must hold the copy the bundle was made against, untouched; 2. that copy as
  // hard links (never written to: replaced entries are renamed over). Both done already when
  // the delta was announced (`cloned`: the time it took is early_s, the wait for it clone_s).
  if (cloned != nullptr && cloned->held.digest == header.base_digest) {
    steps.emplace_back("early_s", cloned->check_s + cloned->clone_s);
    step("clone_s");
  }
  auto held = cloned != nullptr ? Expected<core::HeldManifest>(cloned->held) : held_manifest(dst);
  if (!held) {
    return needs_full_copy(held.error().message);
  }
  if (held->digest != header.base_digest) {
    return needs_full_copy("its manifest is not the one the delta starts from (it missed the last yeet)");
  }
  if (cloned == nullptr) {
    step("check_s");
  }
  if (changes_nothing(header, bundle_dir)) {  // this copy, as checked, is the new one
    return core::BundleApplied{std::move(steps), true};
  }
  DirModes narrowed;
  if (cloned != nullptr) {
    narrowed = cloned->narrowed;
  } else {
    EZPZ_TRY_ASSIGN(narrowed, clone_as_links(dst, held->manifest, staging));
    step("clone_s");
  }
  // 3. Removed entries, then new and changed ones (renamed from the bundle), then deltas.
  std::vector<std::string> touched(header.removed.begin(), header.removed.end());
  for (auto it = header.removed.rbegin(); it != header.removed.rend(); ++it) {
    EZPZ_TRY(remove_tree(join(staging, *it)));
  }
  EZPZ_TRY(move_bundle_entries(bundle_dir, staging, touched));
  auto manifest_text = read_whole(join(staging, std::string(core::kManifestName)), std::size_t(1) << 30);
  if (!manifest_text || text_sha256(*manifest_text) != header.new_digest) {
    return failure("the delta's manifest is missing or damaged");
  }
  EZPZ_TRY_ASSIGN(auto now, core::decode_manifest(*manifest_text));
  EZPZ_TRY(apply_deltas(header, now, dst, delta_dir, staging));
  EZPZ_TRY(restore_modes(staging, narrowed, touched));  // the bundle's own directories have the bundle's modes
  step("apply_s");
  // 4. The result is exactly what the new manifest says: what the delta touched, as stat sees
  // it; the rest is the clone of the copy checked in step 1.
  for (const auto& [path, name] : header.deltas) {
    touched.push_back(path);
  }
  if (auto diverged = core::delta_divergence(held->manifest, now, touched, stat_paths(staging, touched));
      !diverged.empty()) {
    return failure("after the delta, " + diverged + " (not what the new manifest says)");
  }
  step("verify_s");
  return core::BundleApplied{std::move(steps), false};
}

}  // namespace ezpz::sys
