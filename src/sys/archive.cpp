#include "sys/archive.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <unistd.h>

#include "sys/fd_io.hpp"
#include "sys/tree.hpp"

namespace ezpz::sys {
namespace {

struct ArchiveDeleter {
  void operator()(archive* a) const { archive_free(a); }
};
using ArchivePtr = std::unique_ptr<archive, ArchiveDeleter>;

Error archive_error(archive* a, const std::string& what) {
  const char* msg = archive_error_string(a);
  std::string text = what + ": " + (msg != nullptr ? msg : "unknown libarchive error");
  if (const int err = archive_errno(a); err > 0 && err < 4096) {
    const std::string reason = std::strerror(err);
    if (text.find(reason) == std::string::npos) {
      text += " (" + reason + ")";
    }
  }
  return failure(text);
}

std::string join_path(const std::string& a, const std::string& b) {
  return b.empty() ? a : a + "/" + b;
}

}  // namespace

bool symlink_stays_inside(const std::string& entry_path, const std::string& target) {
  if (target.empty() || target.front() == '/') {
    return true;  // absolute links (a venv's bin/python -> /usr/bin/python3) are not followed while extracting
  }
  // Depth of the link's directory (its components other than "" and "."; "./x" and "a//x" are
  // as deep as "x" and "a/x"), then walk the target's components.
  int depth = -1;  // the link's own name is not a directory
  for (std::size_t start = 0; start <= entry_path.size();) {
    auto slash = entry_path.find('/', start);
    auto part = entry_path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part == "..") {
      return false;  // such entries are refused anyway; never call them inside
    }
    if (!part.empty() && part != ".") {
      ++depth;
    }
    if (slash == std::string::npos) {
      break;
    }
    start = slash + 1;
  }
  depth = std::max(depth, 0);
  std::size_t start = 0;
  while (start <= target.size()) {
    auto slash = target.find('/', start);
    auto part = target.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part == "..") {
      if (--depth < 0) {
        return false;
      }
    } else if (!part.empty() && part != ".") {
      ++depth;
    }
    if (slash == std::string::npos) {
      break;
    }
    start = slash + 1;
  }
  return true;
}

namespace {
struct SinkState {
  const ArchiveSink* sink;
};
la_ssize_t sink_write(archive* /*a*/, void* client, const void* buff, std::size_t length) {
  auto* state = static_cast<SinkState*>(client);
  return (*state->sink)(buff, length) ? static_cast<la_ssize_t>(length) : -1;
}
}  // namespace

Expected<core::TreeStats> pack_tree(const std::string& src, const std::string& top_name, const std::string& out,
                                    core::ArchiveFormat format, const std::vector<std::string>& excludes,
                                    const core::ProgressFn& progress, const std::atomic<bool>& stop) {
  int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return failure("cannot create " + out + ": " + std::strerror(errno));
  }
  std::string write_error;
  ArchiveSink sink = [&](const void* data, std::size_t size) {
    if (!write_all(fd, data, size)) {
      write_error = std::strerror(errno);
      return false;
    }
    return true;
  };
  auto stats = pack_tree_to(src, top_name, sink, format, excludes, progress, stop);
  if (::close(fd) != 0 && stats) {
    return failure("cannot write " + out + ": " + std::strerror(errno));
  }
  if (!stats && !write_error.empty()) {
    return failure("cannot write " + out + ": " + write_error + " (is the filesystem full?)");
  }
  return stats;
}

Expected<core::TreeStats> pack_tree_to(const std::string& src, const std::string& top_name, const ArchiveSink& sink,
                                       core::ArchiveFormat format, const std::vector<std::string>& excludes,
                                       const core::ProgressFn& progress, const std::atomic<bool>& stop) {
  ArchivePtr a(archive_write_new());

  archive_write_set_format_pax_restricted(a.get());
  if (format == core::ArchiveFormat::zst) {
    archive_write_add_filter_zstd(a.get());
    const auto threads = std::to_string(std::max(1U, std::thread::hardware_concurrency()));
    archive_write_set_filter_option(a.get(), "zstd", "compression-level", "3");
    archive_write_set_filter_option(a.get(), "zstd", "threads", threads.c_str());
  } else if (format == core::ArchiveFormat::gz) {
    archive_write_add_filter_gzip(a.get());
    archive_write_set_filter_option(a.get(), "gzip", "compression-level", "6");
  } else {
    archive_write_add_filter_none(a.get());
    archive_write_set_bytes_per_block(a.get(), 1 << 16);
  }
  archive_write_set_bytes_in_last_block(a.get(), 1);
  SinkState state{&sink};
  const std::string out = "the archive of " + src;
  if (archive_write_open2(a.get(), &state, nullptr, sink_write, nullptr, nullptr) != ARCHIVE_OK) {
    return archive_error(a.get(), "cannot start " + out);
  }
  std::unique_ptr<archive_entry_linkresolver, void (*)(archive_entry_linkresolver*)> resolver(
      archive_entry_linkresolver_new(), archive_entry_linkresolver_free);
  archive_entry_linkresolver_set_strategy(resolver.get(), archive_format(a.get()));

  core::TreeStats stats;
  unsigned long long done = 0;
  std::optional<Error> error;
  std::vector<char> buf(1 << 20);
  auto write_entry = [&](archive_entry* entry, const std::string& path) -> bool {
    if (archive_write_header(a.get(), entry) < ARCHIVE_WARN) {
      error = archive_error(a.get(), "cannot pack " + path);
      return false;
    }
    if (archive_entry_filetype(entry) != AE_IFREG || archive_entry_size(entry) == 0) {
      return true;
    }
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
      error = failure("cannot read " + path + ": " + std::strerror(errno));
      return false;
    }
    ssize_t n;
    while ((n = ::read(fd, buf.data(), buf.size())) > 0) {
      if (archive_write_data(a.get(), buf.data(), static_cast<std::size_t>(n)) < 0) {
        error = archive_error(a.get(), "cannot pack " + path);
        ::close(fd);
        return false;
      }
      done += static_cast<unsigned long long>(n);
      if (progress) {
        progress(done);
      }
      if (stop.load()) {
        error = failure("interrupted");
        ::close(fd);
        return false;
      }
    }
    ::close(fd);
    return true;
  };

  auto top = std::unique_ptr<archive_entry, void (*)(archive_entry*)>(archive_entry_new(), archive_entry_free);
  struct stat root_st {};
  if (::stat(src.c_str(), &root_st) != 0) {
    return failure("cannot stat " + src + ": " + std::strerror(errno));
  }
  archive_entry_copy_stat(top.get(), &root_st);
  archive_entry_set_pathname(top.get(), top_name.c_str());
  if (!write_entry(top.get(), src)) {
    return *error;
  }
  auto walked = walk_tree(src, excludes, [&](const TreeEntry& e) {
    if (stop.load()) {
      error = failure("interrupted");
      return false;
    }
    if (!tally(stats, e.st)) {
      return true;  // sockets, fifos, devices are not packed
    }
    archive_entry* entry = archive_entry_new();
    archive_entry_copy_stat(entry, &e.st);
    archive_entry_set_uid(entry, 0);
    archive_entry_set_gid(entry, 0);
    archive_entry_set_pathname(entry, (top_name + "/" + e.path).c_str());
    if (S_ISLNK(e.st.st_mode)) {
      archive_entry_set_symlink(entry, e.link_target.c_str());
    }
    archive_entry* sparse = nullptr;
    archive_entry_linkify(resolver.get(), &entry, &sparse);
    bool ok = entry == nullptr || write_entry(entry, join_path(src, e.path));
    if (entry != nullptr) {
      archive_entry_free(entry);
    }
    return ok;
  });
  if (!walked) {
    return walked.error();
  }
  if (error) {
    return *error;
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK) {
    return archive_error(a.get(), "cannot finish " + out);
  }
  return stats;
}

namespace {
struct SourceState {
  const ArchiveSource* source;
  bool failed = false;
};
la_ssize_t source_read(archive* /*a*/, void* client, const void** buff) {
  auto* state = static_cast<SourceState*>(client);
  auto chunk = (*state->source)();
  if (!chunk) {
    state->failed = true;
    return -1;
  }
  *buff = chunk->data();
  return static_cast<la_ssize_t>(chunk->size());
}

Expected<core::TreeStats> extract_opened(archive* in, const std::string& archive_path, const std::string& dst,
                                         const core::ProgressFn& progress, const std::atomic<bool>& stop);
}  // namespace

Expected<core::TreeStats> extract_archive_from(const ArchiveSource& source, const std::string& name,
                                               const std::string& dst, const std::atomic<bool>& stop) {
  ArchivePtr in(archive_read_new());
  archive_read_support_format_tar(in.get());
  archive_read_support_filter_none(in.get());
  archive_read_support_filter_zstd(in.get());
  SourceState state{&source};
  if (archive_read_open(in.get(), &state, nullptr, source_read, nullptr) != ARCHIVE_OK) {
    return archive_error(in.get(), "cannot read " + name + " as a tar archive");
  }
  auto r = extract_opened(in.get(), name, dst, {}, stop);
  if (!r && state.failed) {
    return failure("the stream broke off: " + r.error().message);
  }
  return r;
}

Expected<core::TreeStats> extract_archive(const std::string& archive_path, const std::string& dst,
                                          const core::ProgressFn& progress, const std::atomic<bool>& stop) {
  ArchivePtr in(archive_read_new());
  archive_read_support_format_tar(in.get());
  archive_read_support_filter_none(in.get());
  archive_read_support_filter_gzip(in.get());
  archive_read_support_filter_zstd(in.get());
  if (archive_read_open_filename(in.get(), archive_path.c_str(), 1 << 20) != ARCHIVE_OK) {
    return archive_error(in.get(),
                         "cannot read " + archive_path + " as a tar archive (not a tar archive, or unreadable)");
  }
  return extract_opened(in.get(), archive_path, dst, progress, stop);
}

namespace {
Expected<core::TreeStats> extract_opened(archive* in, const std::string& archive_path, const std::string& dst,
                                         const core::ProgressFn& progress, const std::atomic<bool>& stop) {
  ArchivePtr out(archive_write_disk_new());
  // Entries are checked by name below and then written under the resolved `root`; libarchive
  // refuses any write through a symlink on disk and any ".." on top of that.
  archive_write_disk_set_options(out.get(), ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM |
                                                ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                                ARCHIVE_EXTRACT_NO_OVERWRITE);
  char resolved[PATH_MAX];
  if (::realpath(dst.c_str(), resolved) == nullptr) {
    return failure("cannot resolve " + dst + ": " + std::strerror(errno));
  }
  const std::string root = resolved;
  core::TreeStats stats;
  const std::string where = " in " + archive_path;
  while (true) {
    if (stop.load()) {
      return failure("interrupted");
    }
    archive_entry* entry = nullptr;
    int r = archive_read_next_header(in, &entry);
    if (r == ARCHIVE_EOF) {
      break;
    }
    if (r < ARCHIVE_WARN) {
      return archive_error(in, "not a tar archive, or corrupt or truncated" + where + " (after " +
                                   std::to_string(stats.files + stats.dirs + stats.links) + " entries)");
    }
    std::string name = archive_entry_pathname(entry) != nullptr ? archive_entry_pathname(entry) : "";
    // Refuse, naming the entry, what secure extraction would refuse, and relative symlinks
    // that point outside the tree.
    if (name.empty() || name.front() == '/') {
      return failure("refusing entry '" + name + "'" + where + ": absolute path");
    }
    if (name == ".." || name.rfind("../", 0) == 0 || name.find("/../") != std::string::npos ||
        (name.size() >= 3 && name.compare(name.size() - 3, 3, "/..") == 0)) {
      return failure("refusing entry '" + name + "'" + where + ": '..' leaves the destination");
    }
    if (const char* hard = archive_entry_hardlink(entry)) {
      std::string h = hard;
      if (h.empty() || h.front() == '/' || h == ".." || h.rfind("../", 0) == 0 || h.find("/../") != std::string::npos) {
        return failure("refusing hard link '" + name + "' -> '" + h + "'" + where + ": target outside the destination");
      }
      archive_entry_set_hardlink(entry, (root + "/" + h).c_str());
    }
    if (archive_entry_filetype(entry) == AE_IFLNK) {
      const char* target = archive_entry_symlink(entry);
      if (target != nullptr && !symlink_stays_inside(name, target)) {
        return failure("refusing symlink '" + name + "' -> '" + target + "'" + where +
                       ": it leads outside the destination");
      }
      ++stats.links;
    } else if (archive_entry_filetype(entry) == AE_IFDIR) {
      ++stats.dirs;
    } else if (archive_entry_filetype(entry) == AE_IFREG) {
      ++stats.files;
      stats.bytes += static_cast<unsigned long long>(archive_entry_size(entry));
    }
    stats.newest_mtime = std::max<long long>(stats.newest_mtime, archive_entry_mtime(entry));
    archive_entry_set_pathname(entry, (root + "/" + name).c_str());
    if (archive_write_header(out.get(), entry) < ARCHIVE_WARN) {
      return archive_error(out.get(), "refusing entry '" + name + "'" + where);
    }
    const void* block = nullptr;
    std::size_t size = 0;
    la_int64_t offset = 0;
    while ((r = archive_read_data_block(in, &block, &size, &offset)) == ARCHIVE_OK) {
      // Not even a warning is accepted here: a full disk shows up as one, and the file would
      // be left with holes of zeros.
      if (archive_write_data_block(out.get(), block, size, offset) != ARCHIVE_OK) {
        return archive_error(out.get(), "cannot write '" + name + "'");
      }
      if (progress) {
        progress(static_cast<unsigned long long>(archive_filter_bytes(in, -1)));
      }
    }
    if (r != ARCHIVE_EOF) {
      return archive_error(in, "corrupt or truncated archive" + where + " at entry '" + name + "'");
    }
    if (archive_write_finish_entry(out.get()) != ARCHIVE_OK) {
      return archive_error(out.get(), "cannot finish '" + name + "'");
    }
  }
  if (stats.files + stats.dirs + stats.links == 0) {
    return failure(archive_path + " holds no files: is it an archive?");
  }
  if (archive_write_close(out.get()) != ARCHIVE_OK) {
    return archive_error(out.get(), "cannot finish extracting " + archive_path);
  }
  return stats;
}

}  // namespace

}  // namespace ezpz::sys
