// Extracting a tar safely: every entry judged by core::ExtractGuard before it is written, the
// free space (and --max-bytes) compared with what entries declare as they come, the source's
// compression layer and .sha256 verified to the end (ArchiveSourceFile), and the finished
// tree's symlinks resolved through each other.
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "core/base/strings.hpp"
#include "core/yeet/extract_guard.hpp"
#include "sys/fs/archive.hpp"
#include "sys/fs/archive_source.hpp"
#include "sys/fs/tree.hpp"

namespace ezpz::sys {

void ArchiveDeleter::operator()(archive* a) const {
  archive_free(a);
}

namespace {

/// This process's umask, without changing it (/proc/self/status), else by setting it back.
unsigned current_umask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Umask:", 0) == 0) {
      return static_cast<unsigned>(std::stoul(line.substr(6), nullptr, 8));
    }
  }
  const mode_t old = ::umask(022);
  ::umask(old);
  return old;
}

core::EntryKind kind_of(archive_entry* entry) {
  if (archive_entry_hardlink(entry) != nullptr) {
    return core::EntryKind::hardlink;
  }
  switch (archive_entry_filetype(entry)) {
    case AE_IFREG:
      return core::EntryKind::file;
    case AE_IFDIR:
      return core::EntryKind::dir;
    case AE_IFLNK:
      return core::EntryKind::symlink;
    case AE_IFIFO:
      return core::EntryKind::fifo;
    case AE_IFSOCK:
      return core::EntryKind::socket;
    case AE_IFCHR:
      return core::EntryKind::char_device;
    case AE_IFBLK:
      return core::EntryKind::block_device;
    default:
      return core::EntryKind::other;
  }
}

/// Room on the destination's filesystem, and what the entries so far need of it.
class SpaceBudget {
 public:
  SpaceBudget(const std::string& root, unsigned long long max_bytes) : max_bytes_(max_bytes) {
    struct statvfs vfs {};
    if (::statvfs(root.c_str(), &vfs) == 0 && vfs.f_frsize > 0) {
      block_ = vfs.f_frsize;
      free_bytes_ = static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize;
      free_inodes_ = vfs.f_files > 0 ? static_cast<unsigned long long>(vfs.f_favail) : ~0ULL;
      known_ = true;
    }
  }
  /// A refusal when this entry takes the tree past the room or --max-bytes; empty when it fits.
  std::string admit(core::EntryKind kind, long long declared, const std::string& dst) {
    const auto size = static_cast<unsigned long long>(std::max(0LL, declared));
    bytes_ += size;
    if (kind != core::EntryKind::hardlink) {
      ++inodes_;
      need_ += kind == core::EntryKind::file ? (size + block_ - 1) / block_ * block_ : block_;
    }
    if (max_bytes_ > 0 && bytes_ > max_bytes_) {
      return "it holds more than --max-bytes " + core::human_bytes(max_bytes_);
    }
    if (known_ && need_ > free_bytes_) {
      return "it needs more than the " + core::human_bytes(free_bytes_) + " free on the filesystem of " + dst +
             ": free space there, or choose another --dst";
    }
    if (known_ && inodes_ > free_inodes_) {
      return "it holds more entries than the " + std::to_string(free_inodes_) + " free inodes on the filesystem of " +
             dst;
    }
    return {};
  }

 private:
  unsigned long long max_bytes_;
  unsigned long long block_ = 4096;
  unsigned long long free_bytes_ = 0;
  unsigned long long free_inodes_ = 0;
  bool known_ = false;
  unsigned long long bytes_ = 0;
  unsigned long long need_ = 0;
  unsigned long long inodes_ = 0;
};

constexpr int kBaseFlags = ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_SECURE_NODOTDOT;

struct Extraction {
  archive* in;
  archive* out;
  std::string root;   ///< the resolved destination directory
  std::string where;  ///< " in ARCHIVE"
  core::ExtractGuard guard;
  SpaceBudget space;
  unsigned umask;
  bool own;        ///< yeet's own archive of a tree already here: modes kept as they are
  int base_flags;  ///< kBaseFlags, and libarchive's walk of links on disk where the root was not empty
  core::TreeStats stats;
};

/// Judge one entry and point it at its place under the root; an error refuses the archive.
Expected<void> place_entry(Extraction& x, archive_entry* entry) {
  const char* raw = archive_entry_pathname(entry);
  const std::string name = raw != nullptr ? raw : "";
  const auto kind = kind_of(entry);
  const char* link_text = kind == core::EntryKind::hardlink  ? archive_entry_hardlink(entry)
                          : kind == core::EntryKind::symlink ? archive_entry_symlink(entry)
                                                             : nullptr;
  const std::string link = link_text != nullptr ? link_text : "";
  auto verdict = x.guard.admit(name, kind, link);
  if (!verdict.ok()) {
    const std::string what = link.empty() ? "entry '" + core::excerpt(name) + "'"
                                          : std::string(kind == core::EntryKind::hardlink ? "hard link" : "symlink") +
                                                " '" + core::excerpt(name) + "' -> '" + core::excerpt(link) + "'";
    return failure("refusing " + what + x.where + ": " + verdict.reason);
  }
  if (auto full = x.space.admit(kind, archive_entry_size(entry), x.root); !full.empty()) {
    return failure("refusing " + x.where.substr(4) + ": " + full + " (at entry '" + core::excerpt(name) + "')");
  }
  if (kind == core::EntryKind::hardlink) {
    archive_entry_set_hardlink(entry, (x.root + "/" + core::normalize_entry_name(link)).c_str());
  } else if (kind == core::EntryKind::symlink) {
    ++x.stats.links;
  } else if (kind == core::EntryKind::dir) {
    ++x.stats.dirs;
  } else {
    ++x.stats.files;
    x.stats.bytes += static_cast<unsigned long long>(std::max<la_int64_t>(0, archive_entry_size(entry)));
  }
  if (kind != core::EntryKind::symlink && !x.own) {
    archive_entry_set_perm(entry, core::safe_mode(archive_entry_perm(entry), x.umask));
  }
  x.stats.newest_mtime = std::max<long long>(x.stats.newest_mtime, archive_entry_mtime(entry));
  archive_entry_set_pathname(entry, verdict.name.empty() ? x.root.c_str() : (x.root + "/" + verdict.name).c_str());
  // A member stored again replaces the earlier one (as GNU tar and bsdtar do); otherwise
  // nothing on disk is ever replaced.
  const int flags = x.base_flags | (verdict.replaces               ? ARCHIVE_EXTRACT_UNLINK
                                    : kind == core::EntryKind::dir ? 0
                                                                   : ARCHIVE_EXTRACT_NO_OVERWRITE);
  archive_write_disk_set_options(x.out, flags);
  if (archive_write_header(x.out, entry) < ARCHIVE_WARN) {
    return archive_error(x.out, "refusing entry '" + core::excerpt(name) + "'" + x.where);
  }
  return {};
}

Expected<void> copy_data(Extraction& x, const std::string& name, const core::ProgressFn& progress,
                         const std::function<unsigned long long()>& done) {
  const void* block = nullptr;
  std::size_t size = 0;
  la_int64_t offset = 0;
  int r;
  while ((r = archive_read_data_block(x.in, &block, &size, &offset)) == ARCHIVE_OK) {
    // Not even a warning is accepted here: a full disk shows up as one, and the file would
    // be left with holes of zeros.
    if (archive_write_data_block(x.out, block, size, offset) != ARCHIVE_OK) {
      return archive_error(x.out, "cannot write '" + core::excerpt(name) + "'");
    }
    if (progress) {
      progress(done());
    }
  }
  if (r != ARCHIVE_EOF) {
    return archive_error(x.in, "corrupt or truncated archive" + x.where + " at entry '" + core::excerpt(name) + "'");
  }
  if (archive_write_finish_entry(x.out) != ARCHIVE_OK) {
    return archive_error(x.out, "cannot finish '" + core::excerpt(name) + "'");
  }
  return {};
}

Expected<core::TreeStats> extract_entries(archive* in, const std::string& archive_path, const std::string& dst,
                                          const core::ProgressFn& progress,
                                          const std::function<unsigned long long()>& done,
                                          const std::atomic<bool>& stop, unsigned long long max_bytes, bool own) {
  ArchivePtr out(archive_write_disk_new());
  char resolved[PATH_MAX];
  if (::realpath(dst.c_str(), resolved) == nullptr) {
    return failure("cannot resolve " + dst + ": " + std::strerror(errno));
  }
  const std::string root = resolved;
  // Names must fit under PATH_MAX below the root: nothing is made that cannot be removed by path.
  core::ExtractLimits limits;
  limits.max_path = std::min<std::size_t>(limits.max_path, PATH_MAX - 2 - std::min<std::size_t>(root.size(), 1024));
  limits.resolve_links = !own;
  // Writes through a link: into an empty root, the only links are the archive's own, and the
  // guard refuses any entry below one of them (or below a file). Where something was there
  // before, libarchive also checks every component of every entry's path on disk
  // (ARCHIVE_EXTRACT_SECURE_SYMLINKS: about a dozen openat and fstatat a file).
  const int base_flags = kBaseFlags | (is_empty_dir(root) ? 0 : ARCHIVE_EXTRACT_SECURE_SYMLINKS);
  Extraction x{in,
               out.get(),
               root,
               " in " + core::printable(archive_path),
               core::ExtractGuard(limits),
               SpaceBudget(root, max_bytes),
               current_umask(),
               own,
               base_flags,
               {}};
  while (true) {
    if (stop.load()) {
      return failure("interrupted");
    }
    archive_entry* entry = nullptr;
    const int r = archive_read_next_header(in, &entry);
    if (r == ARCHIVE_EOF) {
      break;
    }
    if (r < ARCHIVE_WARN) {
      return archive_error(in, "not a tar archive, or corrupt or truncated" + x.where + " (after " +
                                   std::to_string(x.stats.files + x.stats.dirs + x.stats.links) + " entries)");
    }
    const char* raw = archive_entry_pathname(entry);
    const std::string name = raw != nullptr ? raw : "";
    EZPZ_TRY(place_entry(x, entry));
    EZPZ_TRY(copy_data(x, name, progress, done));
  }
  if (x.stats.files + x.stats.dirs + x.stats.links == 0) {
    return failure(core::printable(archive_path) + " holds no files: is it an archive?");
  }
  if (auto links = x.guard.check_links(); !links.ok()) {
    return failure("refusing symlink '" + core::excerpt(links.name) + "'" + x.where + ": " + links.reason);
  }
  if (archive_write_close(out.get()) != ARCHIVE_OK) {
    return archive_error(out.get(), "cannot finish extracting " + core::printable(archive_path));
  }
  return x.stats;
}

struct SourceState {
  std::function<std::optional<std::string_view>()> next;
  bool failed = false;
};

la_ssize_t source_read(archive* /*a*/, void* client, const void** buff) {
  auto* state = static_cast<SourceState*>(client);
  auto chunk = state->next();
  if (!chunk) {
    state->failed = true;
    return -1;
  }
  *buff = chunk->data();
  return static_cast<la_ssize_t>(chunk->size());
}

/// A tar reader over `state`: plain tar, or zstd when `zstd` (yeet's stream).
Expected<ArchivePtr> open_tar(SourceState& state, const std::string& name, bool zstd) {
  ArchivePtr in(archive_read_new());
  archive_read_support_format_tar(in.get());
  archive_read_support_filter_none(in.get());
  if (zstd) {
    archive_read_support_filter_zstd(in.get());
  }
  if (archive_read_open(in.get(), &state, nullptr, source_read, nullptr) != ARCHIVE_OK) {
    const char* why = archive_error_string(in.get());
    return failure(core::excerpt(name) + " is not a tar archive (" + (why != nullptr ? why : "unreadable") + ")");
  }
  return in;
}

}  // namespace

bool symlink_stays_inside(const std::string& entry_path, const std::string& target) {
  core::ExtractGuard guard;
  return guard.admit(entry_path, core::EntryKind::symlink, target).ok();
}

Expected<core::TreeStats> extract_archive_from(const ArchiveSource& source, const std::string& name,
                                               const std::string& dst, const std::atomic<bool>& stop) {
  // The stream: zstd of our own making, its frames checked with SHA-256 by the caller.
  SourceState state{[&source] { return source(); }};
  EZPZ_TRY_ASSIGN(auto in, open_tar(state, name, true));
  auto r = extract_entries(
      in.get(), name, dst, {}, [] { return 0ULL; }, stop, 0, true);
  if (!r && state.failed) {
    return failure("the stream broke off: " + r.error().message);
  }
  return r;
}

Expected<core::TreeStats> extract_archive(const std::string& archive_path, const std::string& dst,
                                          const core::ProgressFn& progress, const std::atomic<bool>& stop,
                                          unsigned long long max_bytes, bool own) {
  EZPZ_TRY_ASSIGN(auto src, ArchiveSourceFile::open(archive_path));
  auto& file = *src;
  SourceState state{[&file] { return file.next(); }};
  auto in = open_tar(state, archive_path, false);
  if (!in) {
    return state.failed ? failure(file.error()) : in.error();
  }
  auto r = extract_entries(
      in->get(), archive_path, dst, progress, [&file] { return file.raw_read(); }, stop, max_bytes, own);
  if (!r) {
    // Damage below the tar layer explains a tar error better than the tar error does.
    return state.failed ? failure(file.error()) : r.error();
  }
  // The tar's end is not the file's: its trailers (CRC-32, sizes, checksums) and SHA-256 come last.
  EZPZ_TRY(file.finish());
  r->checks = file.checks();
  return r;
}

}  // namespace ezpz::sys
