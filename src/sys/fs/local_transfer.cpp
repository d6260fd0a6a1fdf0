#include "sys/fs/local_transfer.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/yeet/venv_patch.hpp"
#include "sys/fs/archive.hpp"
#include "sys/fs/destination.hpp"
#include "sys/fs/incremental.hpp"
#include "sys/fs/janitor.hpp"
#include "sys/fs/spare.hpp"
#include "sys/fs/targeted_sync.hpp"
#include "sys/fs/tree.hpp"
#include "sys/os/argv.hpp"
#include "sys/os/read_text.hpp"
#include "sys/os/safe_dirs.hpp"

namespace ezpz::sys {
namespace {

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

/// Apply prefix rewrites to one text file; true when it changed.
Expected<bool> rewrite_file(const std::string& path, const std::vector<std::string>& old_prefixes,
                            const std::string& new_prefix, bool* binary) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return false;
  }
  EZPZ_TRY_ASSIGN(auto text, read_whole(path));
  std::string current = text;
  bool changed = false;
  const auto name = path.substr(path.rfind('/') + 1);
  if (name == "activate" || name == "activate.csh" || name == "activate.fish") {
    if (auto next = core::rewrite_activate(current, old_prefixes, new_prefix)) {
      current = std::move(*next);
      changed = true;
    }
  } else {
    for (const auto& old : old_prefixes) {
      if (auto next = core::replace_prefix(current, old, new_prefix)) {
        current = std::move(*next);
        changed = true;
      }
    }
  }
  if (!changed) {
    return false;
  }
  if (auto portable = core::portable_shebang(current, new_prefix)) {
    current = std::move(*portable);
  }
  if (core::looks_binary(text)) {
    if (binary != nullptr) {
      *binary = true;
    }
    return false;  // reported, never rewritten: a different length would corrupt it
  }
  EZPZ_TRY(replace_file(path, current, st.st_mode));
  const struct timespec times[2] = {st.st_atim, st.st_mtim};
  ::utimensat(AT_FDCWD, path.c_str(), times, 0);
  return true;
}

Expected<bool> relink(const std::string& path, const std::string& target, const std::vector<std::string>& old_prefixes,
                      const std::string& new_prefix) {
  for (const auto& old : old_prefixes) {
    if (auto moved = core::relink_target(target, old, new_prefix)) {
      const std::string tmp = path + ".ezpz-new";
      ::unlink(tmp.c_str());
      if (::symlink(moved->c_str(), tmp.c_str()) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
        return failure("cannot relink " + path + ": " + std::strerror(errno));
      }
      return true;
    }
  }
  return false;
}

}  // namespace

PosixLocalTransfer::PosixLocalTransfer(StopSignals& stop) : stop_(stop) {}

void PosixLocalTransfer::arm() {
  stop_.arm();
}

int PosixLocalTransfer::interrupted() const {
  return stop_.signal();
}

int PosixLocalTransfer::watcher_main(const std::vector<std::string>& args) {
  return call_main(args, janitor_main);
}

core::SourceFacts PosixLocalTransfer::inspect(const std::string& path) {
  core::SourceFacts facts;
  struct stat st {};
  facts.exists = ::stat(path.c_str(), &st) == 0;
  facts.is_directory = facts.exists && S_ISDIR(st.st_mode);
  facts.has_activate = facts.is_directory && exists(path + "/bin/activate");
  facts.has_conda_meta = facts.is_directory && is_dir(path + "/conda-meta");
  char resolved[PATH_MAX];
  facts.real_path = ::realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
  return facts;
}

core::DestinationFacts PosixLocalTransfer::inspect_destination(const std::string& path) {
  return sys::inspect_destination(path);
}

Expected<core::TreeStats> PosixLocalTransfer::measure(const std::string& path,
                                                      const std::vector<std::string>& excludes) {
  arm();
  core::TreeStats stats;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return failure("cannot stat " + path + ": " + std::strerror(errno));
  }
  stats.newest_mtime = st.st_mtim.tv_sec;
  if (!S_ISDIR(st.st_mode)) {
    stats.files = 1;
    stats.bytes = static_cast<unsigned long long>(st.st_size);
    return stats;
  }
  // One walk: what is copied, and what the excludes leave out (said to the user).
  EZPZ_TRY(walk_tree(path, {}, [&](const TreeEntry& e) {
    std::size_t from = 0;
    bool left_out = false;
    bool top = false;  // the excluded directory itself (not one inside it)
    for (std::size_t at = 0; !left_out && at != std::string::npos; from = at + 1) {
      at = e.path.find('/', from);
      const auto name = e.path.substr(from, at == std::string::npos ? std::string::npos : at - from);
      left_out = std::find(excludes.begin(), excludes.end(), name) != excludes.end();
      top = left_out && at == std::string::npos;
    }
    if (!left_out) {
      tally(stats, e.st);
    } else if (top && S_ISDIR(e.st.st_mode)) {
      ++stats.excluded_dirs;
    } else if (S_ISREG(e.st.st_mode)) {
      ++stats.excluded_files;
      stats.excluded_bytes += static_cast<unsigned long long>(e.st.st_size);
    }
    return !stop_.flag().load();
  }));
  return stats;
}

Expected<core::ChangeEstimate> PosixLocalTransfer::estimate_sync(const std::string& src, const std::string& dst,
                                                                 const std::vector<std::string>& excludes) {
  arm();
  struct There {
    struct stat st {};
    bool matched = false;
  };
  std::map<std::string, There> there;
  auto r = walk_tree(dst, {}, [&](const TreeEntry& e) {
    if (!e.path.empty()) {
      there[e.path].st = e.st;
    }
    return !stop_.flag().load();
  });
  if (!r) {
    return r.error();
  }
  core::ChangeEstimate est;
  r = walk_tree(src, excludes, [&](const TreeEntry& e) {
    auto it = e.path.empty() ? there.end() : there.find(e.path);
    const bool found = it != there.end();
    const auto& s = e.st;
    const bool same = found && it->second.st.st_mode == s.st_mode &&
                      (!S_ISREG(s.st_mode) ||
                       (it->second.st.st_size == s.st_size && it->second.st.st_mtim.tv_sec == s.st_mtim.tv_sec &&
                        it->second.st.st_mtim.tv_nsec == s.st_mtim.tv_nsec));
    if (found) {
      it->second.matched = true;
    }
    if (!same && S_ISREG(s.st_mode)) {
      ++est.files;
      est.bytes += static_cast<unsigned long long>(s.st_size);
    }
    return !stop_.flag().load();
  });
  if (!r) {
    return r.error();
  }
  for (const auto& [path, entry] : there) {
    est.removed += entry.matched || path == core::kManifestName || path == core::kYeetMarkerName ? 0 : 1;
  }
  return est;
}

Expected<std::string> PosixLocalTransfer::make_staging(const std::string& destination, core::WorkLock lock) {
  arm();
  auto slash = destination.rfind('/');
  const std::string parent = slash == 0 ? "/" : destination.substr(0, slash);
  // mkdir -p the parent (only what is missing; private, and only the user's, below /tmp).
  EZPZ_TRY(make_dirs_safely(parent));
  const std::string staging = core::work_path(destination, ::getpid());
  // The watcher first: it removes our work (and its .delta) and our lock if we are killed.
  (void)start_janitor(destination, staging);
  // Another yeet to the same destination (a second job) waits until this one has ended: two
  // never both report success with one tree.
  if (lock == core::WorkLock::wait) {
    EZPZ_TRY(lock_.acquire(destination, stop_.flag()));
  }
  for (auto& left : remove_stale_staging(destination)) {
    warnings_.push_back(std::move(left));
  }
  // A leftover of a killed run that had our pid: ours to remove (another user's is hers: the
  // mkdir below says so).
  struct stat st {};
  if (::lstat(staging.c_str(), &st) == 0 && (st.st_uid == ::geteuid() || ::geteuid() == 0)) {
    if (auto gone = remove_tree(staging); !gone) {
      warnings_.push_back(gone.error().message);
    }
  }
  // 0700: the tree is the user's alone however open its source is (docs/security.md).
  if (::mkdir(staging.c_str(), 0700) != 0) {
    return failure(work_dir_error(staging));
  }
  return staging;
}

Expected<core::TreeStats> PosixLocalTransfer::copy_tree(const std::string& src, const std::string& staging,
                                                        const std::vector<std::string>& excludes,
                                                        const core::ProgressFn& progress) {
  return sys::copy_tree(src, staging, excludes, progress, stop_.flag());
}

Expected<core::TreeStats> PosixLocalTransfer::sync_tree(const std::string& src, const std::string& previous,
                                                        const std::string& staging,
                                                        const std::vector<std::string>& excludes,
                                                        const core::ProgressFn& progress) {
  if (!is_dir(previous)) {
    return sys::copy_tree(src, staging, excludes, progress, stop_.flag());
  }
  return sys::sync_tree(src, previous, staging, excludes, progress, stop_.flag());
}

Expected<core::TreeStats> PosixLocalTransfer::pack(const std::string& src, const std::string& top_name,
                                                   const std::string& out, core::ArchiveFormat format,
                                                   const std::vector<std::string>& excludes, core::PackDigest digest,
                                                   const core::ProgressFn& progress) {
  return pack_tree(src, top_name, out, format, excludes, progress, stop_.flag(), digest == core::PackDigest::sha256);
}

Expected<std::string> PosixLocalTransfer::make_private_dir(const std::string& prefix) {
  return sys::make_private_dir(prefix);
}

Expected<void> PosixLocalTransfer::write_checksum(const std::string& archive, const std::string& sha256) {
  // sha256sum's format, naming the archive as it sits beside it: `sha256sum -c` works there too.
  return replace_file(archive + ".sha256", sha256 + "  " + archive.substr(archive.rfind('/') + 1) + "\n", 0644);
}

Expected<core::TreeStats> PosixLocalTransfer::extract(const std::string& archive, const std::string& staging,
                                                      unsigned long long max_bytes, core::ArchiveOrigin origin,
                                                      const core::ProgressFn& progress) {
  auto stats = extract_archive(archive, staging, progress, stop_.flag(), max_bytes, origin == core::ArchiveOrigin::own);
  if (!stats) {
    return stats;
  }
  stats->copied_files = stats->files;
  EZPZ_TRY_ASSIGN(auto lifted, lift_single_directory(staging));
  if (lifted) {
    --stats->dirs;
  }
  return stats;
}

std::optional<std::string> PosixLocalTransfer::recorded_prefix(const std::string& root) {
  auto text = read_whole(root + "/bin/activate", 1 << 20);
  if (!text) {
    return std::nullopt;
  }
  return core::activate_prefix(*text);
}

Expected<core::PatchReport> PosixLocalTransfer::patch_env(const std::string& root, core::EnvKind kind,
                                                          const std::vector<std::string>& old_prefixes,
                                                          const std::string& new_prefix) {
  core::PatchReport report;
  report.old_prefix = old_prefixes.empty() ? "" : old_prefixes.front();
  if (kind == core::EnvKind::none || old_prefixes.empty()) {
    return report;
  }
  auto visit_file = [&](const TreeEntry& e) -> Expected<void> {
    const std::string path = root + "/" + e.path;
    if (S_ISLNK(e.st.st_mode)) {
      EZPZ_TRY_ASSIGN(auto moved, relink(path, e.link_target, old_prefixes, new_prefix));
      if (moved) {
        report.relinked.push_back(e.path);
      }
      return {};
    }
    if (!S_ISREG(e.st.st_mode)) {
      return {};
    }
    const bool in_bin = e.path.rfind("bin/", 0) == 0 && e.path.find('/', 4) == std::string::npos;
    if (kind == core::EnvKind::venv && !core::is_venv_text_file(e.path)) {
      if (!in_bin) {
        return {};
      }
      auto head = read_head(path, 4096);
      bool names_prefix = false;
      for (const auto& old : old_prefixes) {
        names_prefix = names_prefix || (head && core::shebang_names(*head, old));
      }
      if (!names_prefix) {
        return {};
      }
    }
    bool binary = false;
    EZPZ_TRY_ASSIGN(auto changed, rewrite_file(path, old_prefixes, new_prefix, &binary));
    if (changed) {
      report.rewritten.push_back(e.path);
    } else if (binary) {
      report.binary_prefix.push_back(e.path);
    }
    return {};
  };
  std::optional<Error> error;
  auto visit = [&](const TreeEntry& e) {
    if (auto r = visit_file(e); !r) {
      error = r.error();
      return false;
    }
    return !stop_.flag().load();
  };
  if (kind == core::EnvKind::conda) {  // a conda env names its prefix anywhere (text files)
    EZPZ_TRY(walk_tree(root, {"pkgs"}, visit));
    return error ? Expected<core::PatchReport>(*error) : report;
  }
  // A venv keeps its prefix in pyvenv.cfg and bin/ only: the rest of the tree is not read.
  for (const char* top : {"pyvenv.cfg", "bin"}) {
    auto e = stat_at(root, top);
    if (!e) {
      continue;
    }
    if (!visit(*e)) {
      break;  // an error, or stopped
    }
    if (S_ISDIR(e->st.st_mode)) {
      EZPZ_TRY(walk_tree(root + "/bin", {}, [&](const TreeEntry& inner) {
        TreeEntry named = inner;
        named.path = "bin/" + inner.path;
        return visit(named);
      }));
    }
  }
  return error ? Expected<core::PatchReport>(*error) : report;
}

Expected<void> PosixLocalTransfer::commit(const std::string& staging, const std::string& destination,
                                          core::Previous previous) {
  EZPZ_TRY_ASSIGN(auto old, swap_tree(staging, destination));
  // The old tree kept as the spare, or removed and a twin of the new one made the spare (at a
  // work name meanwhile): now, or with later_ (the head's yeet) while the other nodes get
  // theirs, at the lowest CPU priority (take_warnings waits for it).
  auto settle = [destination, old = std::move(old), previous, twin = staging + ".spare"] {
    auto settled = settle_spare(destination, old, previous, twin);
    Leftovers left = std::move(settled.left);
    if (auto gone = settled.remove.empty() ? Expected<void>() : remove_tree(settled.remove); !gone) {
      left.push_back(gone.error().message);
    }
    return left;
  };
  if (!later_) {
    for (auto& left : settle()) {
      warnings_.push_back(std::move(left));
    }
    return {};
  }
  await_removal();
  removing_ = std::async(std::launch::async, [settle = std::move(settle)] {
    const sched_param idle{};
    (void)::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &idle);  // this thread only, lowered
    return settle();
  });
  return {};
}

void PosixLocalTransfer::await_removal() {
  if (removing_.valid()) {
    for (auto& left : removing_.get()) {
      warnings_.push_back(std::move(left));
    }
  }
}

void PosixLocalTransfer::discard(const std::string& path) {
  await_prepared();  // never remove what a clone is still being made in
  if (auto gone = remove_tree(path); !gone) {
    warnings_.push_back(gone.error().message);
  }
}

std::vector<std::string> PosixLocalTransfer::take_warnings() {
  await_removal();
  return std::exchange(warnings_, {});
}

void PosixLocalTransfer::watch(const std::string& destination, const std::string& work) {
  (void)start_janitor(destination, work);
}

Expected<core::HeldManifest> PosixLocalTransfer::held_manifest(const std::string& root) {
  return sys::held_manifest(root);
}

Expected<void> PosixLocalTransfer::write_marker(const std::string& root, const std::string& text) {
  return replace_file(root + "/" + std::string(core::kYeetMarkerName), text, 0644);
}

Expected<core::HeldManifest> PosixLocalTransfer::write_manifest(const std::string& root, const core::Manifest* reuse,
                                                                const std::string& source_root,
                                                                const std::vector<std::string>& ignore) {
  return sys::write_manifest(root, reuse, source_root, ignore);
}

Expected<core::BundleStats> PosixLocalTransfer::make_bundle(const std::string& old_root, const core::HeldManifest& old,
                                                            const std::string& new_root, const core::HeldManifest& now,
                                                            const std::string& bundle) {
  return sys::make_bundle(old_root, old.manifest, old.digest, new_root, now.manifest, now.digest, bundle);
}

bool PosixLocalTransfer::is_bundle(const std::string& dir) {
  return sys::is_bundle(dir);
}

void PosixLocalTransfer::prepare_apply(const std::string& dst, const std::string& out, const std::string& base_digest) {
  if (prepared_) {
    return;  // one announce a run
  }
  prepared_ = Prepared{
      out, std::async(std::launch::async, [dst, out, base_digest] { return sys::clone_held(dst, base_digest, out); })};
}

void PosixLocalTransfer::await_prepared() {
  if (prepared_ && prepared_->clone.valid()) {
    prepared_->clone.wait();
  }
}

Expected<core::BundleApplied> PosixLocalTransfer::apply_bundle(const std::string& bundle_dir, const std::string& dst,
                                                               const std::string& out) {
  if (prepared_ && prepared_->out == out && prepared_->clone.valid()) {
    const auto start = std::chrono::steady_clock::now();
    if (auto cloned = prepared_->clone.get()) {  // made while the stream came: start from it
      cloned->waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return sys::apply_bundle(bundle_dir, dst, out, &*cloned);
    }
  }
  if (::mkdir(out.c_str(), 0700) != 0) {  // private at the top, as every tree yeet makes
    return failure(work_dir_error(out));
  }
  return sys::apply_bundle(bundle_dir, dst, out);
}

Expected<core::ChangeEstimate> PosixLocalTransfer::estimate_changes(const std::string& source,
                                                                    const std::vector<std::string>& excludes,
                                                                    const core::Manifest& m) {
  return sys::estimate_changes(source, excludes, m);
}

Expected<core::TreeStats> PosixLocalTransfer::sync_changes(const std::string& source, const std::string& dst,
                                                           const core::HeldManifest& base,
                                                           const core::ChangeEstimate& changes, const std::string& out,
                                                           const core::ProgressFn& progress) {
  return sys::sync_changes(source, dst, base, changes, out, progress, stop_.flag());
}

Expected<core::HeldManifest> PosixLocalTransfer::update_manifest(const std::string& root,
                                                                 const core::HeldManifest& base,
                                                                 const std::string& source_root,
                                                                 const std::vector<std::string>& touched,
                                                                 const std::vector<std::string>& gone) {
  return sys::update_manifest(root, base, source_root, touched, gone);
}

Expected<void> PosixLocalTransfer::rename_file(const std::string& from, const std::string& to) {
  // Written 0600 in a private directory; in place it has the mode any new file of the user has.
  if (::chmod(from.c_str(), 0666 & ~current_umask()) != 0 || ::rename(from.c_str(), to.c_str()) != 0) {
    return failure("cannot move " + from + " to " + to + ": " + std::strerror(errno));
  }
  return {};
}

}  // namespace ezpz::sys
