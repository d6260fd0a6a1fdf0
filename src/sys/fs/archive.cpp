#include "sys/fs/archive.hpp"

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
#include <nettle/sha2.h>
#include <unistd.h>

#include "core/base/strings.hpp"
#include "sys/fs/adaptive_zstd.hpp"
#include "sys/fs/tree.hpp"
#include "sys/os/fd_io.hpp"

namespace ezpz::sys {

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

namespace {
struct SinkState {
  const ArchiveSink* sink;
};
la_ssize_t sink_write(archive* /*a*/, void* client, const void* buff, std::size_t length) {
  auto* state = static_cast<SinkState*>(client);
  return (*state->sink)(buff, length) ? static_cast<la_ssize_t>(length) : -1;
}
}  // namespace

namespace {
Expected<core::TreeStats> pack_into(OwnedFd& fd, const std::string& src, const std::string& top_name,
                                    const std::string& out, core::ArchiveFormat format,
                                    const std::vector<std::string>& excludes, const core::ProgressFn& progress,
                                    const std::atomic<bool>& stop, bool digest) {
  std::string write_error;
  sha256_ctx sha;
  sha256_init(&sha);
  ArchiveSink to_file = [&](const void* data, std::size_t size) {
    if (digest) {
      sha256_update(&sha, size, static_cast<const std::uint8_t*>(data));
    }
    if (!write_all(fd.get(), data, size)) {
      write_error = std::strerror(errno);
      return false;
    }
    return true;
  };
  Expected<core::TreeStats> stats = core::TreeStats{};
  if (format == core::ArchiveFormat::zst) {
    // zstd here rather than libarchive's (3.6 writes frames without a checksum): every frame
    // carries one, so damage on a shared filesystem is found when the archive is read.
    AdaptiveZstd zstd(to_file, 3, std::max(1U, std::thread::hardware_concurrency()), FrameCheck::xxh64);
    ArchiveSink tar_sink = [&zstd](const void* data, std::size_t size) { return zstd.write(data, size); };
    stats = pack_tree_to(src, top_name, tar_sink, core::ArchiveFormat::tar, excludes, progress, stop);
    if (stats && !zstd.finish()) {
      stats = failure("cannot compress the archive of " + src);
    }
  } else {
    stats = pack_tree_to(src, top_name, to_file, format, excludes, progress, stop);
  }
  if (!fd.close() && stats) {
    return failure("cannot write " + out + ": " + std::strerror(errno));
  }
  if (!write_error.empty()) {
    return failure("cannot write " + out + ": " + write_error + " (is the filesystem full?)");
  }
  if (stats && digest) {
    unsigned char sum[SHA256_DIGEST_SIZE];
    sha256_digest(&sha, sizeof(sum), sum);
    stats->sha256 = core::to_hex(sum, sizeof(sum));
  }
  return stats;
}
}  // namespace

Expected<core::TreeStats> pack_tree(const std::string& src, const std::string& top_name, const std::string& out,
                                    core::ArchiveFormat format, const std::vector<std::string>& excludes,
                                    const core::ProgressFn& progress, const std::atomic<bool>& stop, bool digest) {
  // A new file, never one someone else made or linked there (docs/security.md); readable by us
  // alone while it is written (the caller's private directory keeps it so).
  OwnedFd fd(::open(out.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    return failure("cannot create " + out + ": " + std::strerror(errno));
  }
  Expected<core::TreeStats> stats = pack_into(fd, src, top_name, out, format, excludes, progress, stop, digest);
  if (!stats) {
    ::unlink(out.c_str());  // ours: made above with O_EXCL
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
    const OwnedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid()) {
      error = failure("cannot read " + path + ": " + std::strerror(errno));
      return false;
    }
    ssize_t n;
    while ((n = ::read(fd.get(), buf.data(), buf.size())) > 0) {
      if (archive_write_data(a.get(), buf.data(), static_cast<std::size_t>(n)) < 0) {
        error = archive_error(a.get(), "cannot pack " + path);
        return false;
      }
      done += static_cast<unsigned long long>(n);
      if (progress) {
        progress(done);
      }
      if (stop.load()) {
        error = failure("interrupted");
        return false;
      }
    }
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
  EZPZ_TRY(walk_tree(src, excludes, [&](const TreeEntry& e) {
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
  }));
  if (error) {
    return *error;
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK) {
    return archive_error(a.get(), "cannot finish " + out);
  }
  return stats;
}

}  // namespace ezpz::sys
