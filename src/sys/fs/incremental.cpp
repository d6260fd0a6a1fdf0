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

/// Changed files at least this big are sent as a librsync delta when it is smaller.
constexpr long long kDeltaMinSize = 64 * 1024;

long long mtime_ns(const struct stat& st) {
  return static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
}

Expected<void> make_parents(const std::string& root, const std::string& rel) {
  for (auto slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', slash + 1)) {
    const auto dir = join_path(root, rel.substr(0, slash));
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return io_error("cannot create directory", dir);
    }
  }
  return {};
}

}  // namespace

Error needs_full_copy(const std::string& why) {
  return Error{ExitCode::failure, std::string(core::kNeedsFullCopy) + why, ErrorKind::needs_full_copy};
}

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
  // One buffer a thread, kept: a fresh 1 MiB for each file costs its page faults every time.
  static thread_local std::vector<unsigned char> buf(std::size_t(1) << 20);
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

core::StatEntry stat_entry(const struct stat& st, std::string link) {
  core::StatEntry s;
  s.type = S_ISDIR(st.st_mode) ? 'd' : S_ISLNK(st.st_mode) ? 'l' : 'f';
  s.mode = st.st_mode & 07777;
  s.size = s.type == 'f' ? static_cast<unsigned long long>(st.st_size) : 0;
  s.mtime_ns = mtime_ns(st);
  s.link = std::move(link);
  return s;
}

core::StatEntry stat_entry(const TreeEntry& e) {
  return stat_entry(e.st, e.link_target);
}

bool not_tree(std::string_view name) {
  return name == core::kManifestName || name == core::kFailedNodesName || name == core::kYeetMarkerName;
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
    if (e.path.find('/') != std::string::npos || !not_tree(e.path)) {
      out[e.path] = stat_entry(e);
    }
    return true;
  }));
  if (!foreign.empty()) {
    return failure(join_path(root, foreign) + " belongs to another user: that tree is not reused");
  }
  return out;
}

Expected<core::Manifest> build_manifest(const std::string& root, const core::Manifest* reuse,
                                        const std::string& source_root, const std::vector<std::string>& ignore) {
  core::Manifest m;
  m.ignore = ignore;
  std::optional<Error> error;
  auto r = walk_tree(root, ignore, [&](const TreeEntry& e) {
    if (e.path.find('/') == std::string::npos && not_tree(e.path)) {
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
        auto digest = file_sha256(join_path(root, e.path));
        if (!digest) {
          error = digest.error();
          return false;
        }
        entry.digest = *digest;
      }
      struct stat src {};
      if (!source_root.empty() && ::lstat(join_path(source_root, e.path).c_str(), &src) == 0 && S_ISREG(src.st_mode)) {
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

Expected<core::HeldManifest> read_manifest(const std::string& root) {
  struct stat top {};
  if (::lstat(root.c_str(), &top) == 0 && top.st_uid != ::geteuid()) {
    return failure(root + " belongs to another user: that tree is not reused");
  }
  auto text = read_whole(join_path(root, std::string(core::kManifestName)), std::size_t(1) << 30);
  if (!text) {
    return failure("no " + std::string(core::kManifestName) + " in " + root + " (no complete yeet there yet)");
  }
  auto m = core::decode_manifest(*text);
  if (!m) {
    return failure(root + "/" + std::string(core::kManifestName) + ": " + m.error().message);
  }
  auto digest = text_sha256(*text);
  return core::HeldManifest{std::move(*m), std::move(digest), std::move(*text)};
}

Expected<core::HeldManifest> held_manifest(const std::string& root) {
  EZPZ_TRY_ASSIGN(auto held, read_manifest(root));
  EZPZ_TRY_ASSIGN(auto tree, stat_tree(root, held.manifest.ignore));
  if (auto diverged = core::tree_divergence(held.manifest, tree); !diverged.empty()) {
    return failure(root + " is not the copy its manifest describes (" + diverged + ")");
  }
  return held;
}

Expected<core::HeldManifest> write_manifest(const std::string& root, const core::Manifest* reuse,
                                            const std::string& source_root, const std::vector<std::string>& ignore) {
  EZPZ_TRY_ASSIGN(auto m, build_manifest(root, reuse, source_root, ignore));
  auto text = core::encode_manifest(m);
  EZPZ_TRY(replace_file(join_path(root, std::string(core::kManifestName)), text, 0644));
  auto digest = text_sha256(text);
  return core::HeldManifest{std::move(m), std::move(digest), std::move(text)};
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
  const std::string delta_dir = join_path(bundle, std::string(core::kDeltaDirName));
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
    const auto from = join_path(new_root, path);
    const auto to = join_path(bundle, path);
    EZPZ_TRY(make_parents(bundle, path));
    auto before = old.entries.find(path);
    if (e.type == 'f' && before != old.entries.end() && before->second.type == 'f' &&
        static_cast<long long>(e.size) >= kDeltaMinSize) {
      const auto name = std::to_string(header.deltas.size());
      const auto delta_path = join_path(delta_dir, name);
      auto size = make_delta(join_path(old_root, path), from, delta_path);
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
  if (::link(join_path(new_root, manifest).c_str(), join_path(bundle, manifest).c_str()) != 0) {
    return io_error("cannot link", join_path(new_root, manifest));
  }
  EZPZ_TRY(replace_file(join_path(delta_dir, "header.json"), core::encode_delta_header(header), 0644));
  return stats;
}

bool is_bundle(const std::string& dir) {
  struct stat st {};
  return ::lstat(join_path(join_path(dir, std::string(core::kDeltaDirName)), "header.json").c_str(), &st) == 0 &&
         S_ISREG(st.st_mode);
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
    const auto to = join_path(staging, e.path);
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
    if (::rename(join_path(bundle_dir, e.path).c_str(), to.c_str()) != 0) {
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
/// manifest's digest (its entry among `changed`), with its mode and mtime, renamed into `staging`.
Expected<void> apply_deltas(const core::DeltaHeader& header, const std::map<std::string, core::ManifestEntry>& changed,
                            const std::string& dst, const std::string& delta_dir, const std::string& staging) {
  for (const auto& [path, name] : header.deltas) {
    auto entry = changed.find(path);
    if (entry == changed.end() || entry->second.type != 'f') {
      return failure("the delta patches " + path + ", which its manifest does not list as a file");
    }
    const auto to = join_path(staging, path);
    // Written in the bundle's own directory (the work's, private), never beside `to`: a name
    // there could be an entry of the tree, a hard link shared with the copy.
    const auto tmp = join_path(delta_dir, name + ".patched");
    auto digest = apply_delta(join_path(dst, path), join_path(delta_dir, name), tmp);
    if (!digest) {
      ::unlink(tmp.c_str());
      return digest.error();
    }
    if (*digest != entry->second.digest) {
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

Expected<core::BundleApplied> apply_bundle(const std::string& bundle_dir, const std::string& dst,
                                           const std::string& staging, const ClonedCopy* cloned) {
  core::StepTimes steps;
  auto t = std::chrono::steady_clock::now();
  auto step = [&](const char* name) {
    const auto now = std::chrono::steady_clock::now();
    steps.emplace_back(name, std::chrono::duration<double>(now - t).count());
    t = now;
  };
  const auto delta_dir = join_path(bundle_dir, std::string(core::kDeltaDirName));
  EZPZ_TRY_ASSIGN(auto text, read_whole(join_path(delta_dir, "header.json"), 64U << 20));
  EZPZ_TRY_ASSIGN(auto header, core::decode_delta_header(text));
  // 1. A bundle that changes nothing: this node's copy, checked against the manifest the bundle
  // starts from, already is the new one.
  if (changes_nothing(header, bundle_dir)) {
    auto held = held_manifest(dst);
    if (!held || held->digest != header.base_digest) {
      return needs_full_copy(held ? "its manifest is not the one the delta starts from (it missed the last yeet)"
                                  : held.error().message);
    }
    step("check_s");
    return core::BundleApplied{std::move(steps), true};
  }
  // 2. This node's copy, checked against that manifest as it is cloned as hard links (never
  // written to: replaced entries are renamed over); done already when the delta was announced
  // (`cloned`: early_s is what it took, clone_s the wait for it).
  std::optional<ClonedCopy> fresh;
  if (cloned != nullptr && cloned->held.digest != header.base_digest) {  // announced from another: anew
    EZPZ_TRY(remove_tree(staging));
    if (::mkdir(staging.c_str(), 0700) != 0) {
      return io_error("cannot create directory", staging);
    }
    cloned = nullptr;
  }
  if (cloned == nullptr) {
    EZPZ_TRY_ASSIGN(fresh, ready_copy(dst, header.base_digest, staging));
    steps.emplace_back("check_s", fresh->check_s);
    steps.emplace_back(fresh->from_spare ? "spare_s" : "clone_s", fresh->clone_s);
    t = std::chrono::steady_clock::now();
    cloned = &*fresh;
  } else {
    steps.emplace_back("early_s", cloned->check_s + cloned->clone_s);
    steps.emplace_back(cloned->from_spare ? "spare_s" : "clone_s", cloned->waited_s);
  }
  const auto& held = cloned->held;
  const auto& narrowed = cloned->narrowed;
  // 3. Removed entries, then new and changed ones (renamed from the bundle), then deltas.
  std::vector<std::string> touched(header.removed.begin(), header.removed.end());
  for (auto it = header.removed.rbegin(); it != header.removed.rend(); ++it) {
    EZPZ_TRY(remove_tree(join_path(staging, *it)));
  }
  EZPZ_TRY(move_bundle_entries(bundle_dir, staging, touched));
  auto manifest_text = read_whole(join_path(staging, std::string(core::kManifestName)), std::size_t(1) << 30);
  if (!manifest_text || text_sha256(*manifest_text) != header.new_digest) {
    return failure("the delta's manifest is missing or damaged");
  }
  // Only its lines that differ from this copy's manifest are read (a patched file's line does).
  EZPZ_TRY_ASSIGN(const auto now, core::manifest_changes(held.text, *manifest_text));
  EZPZ_TRY(apply_deltas(header, now.whole ? now.whole->entries : now.set, dst, delta_dir, staging));
  EZPZ_TRY(restore_modes(staging, narrowed, touched));  // the bundle's own directories have the bundle's modes
  step("apply_s");
  // 4. The result is exactly what the new manifest says: what the delta touched, as stat sees
  // it; the rest is the clone of the copy checked in step 1.
  for (const auto& [path, name] : header.deltas) {
    touched.push_back(path);
  }
  if (auto diverged = core::delta_divergence(held.manifest, now, touched, stat_paths(staging, touched));
      !diverged.empty()) {
    return failure("after the delta, " + diverged + " (not what the new manifest says)");
  }
  step("verify_s");
  // 5. The copy this replaces shares all but what the delta touched: worth keeping as the spare?
  auto previous = core::Previous::replace;
  if (!now.whole) {
    std::vector<std::string> changed;
    for (const auto& [path, e] : now.set) {
      changed.push_back(path);
    }
    previous = core::previous_after(held.manifest, header.removed, changed);
  }
  return core::BundleApplied{std::move(steps), false, previous};
}

}  // namespace ezpz::sys
