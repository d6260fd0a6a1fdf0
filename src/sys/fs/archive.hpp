// Tar archives with libarchive: pack a tree (zstd, multithreaded, or gzip) and extract
// one safely. Only tar/pax and the none/gzip/zstd filters are registered.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/expected.hpp"
#include "core/yeet/transfer.hpp"

struct archive;  // libarchive

namespace ezpz::sys {

struct ArchiveDeleter {
  void operator()(archive* a) const;
};
using ArchivePtr = std::unique_ptr<archive, ArchiveDeleter>;
/// `what`: libarchive's message for `a` (and errno's words when they add something).
Error archive_error(archive* a, const std::string& what);

/// Where packed bytes go: return false to stop (the sink failed).
using ArchiveSink = std::function<bool(const void* data, std::size_t size)>;
/// Where archive bytes come from: returns the next chunk, empty at the end; nullopt on error.
using ArchiveSource = std::function<std::optional<std::string_view>()>;

/// Pack `src` as `top_name/...` into `sink`.
Expected<core::TreeStats> pack_tree_to(const std::string& src, const std::string& top_name, const ArchiveSink& sink,
                                       core::ArchiveFormat format, const std::vector<std::string>& excludes,
                                       const core::ProgressFn& progress, const std::atomic<bool>& stop);

/// Extract the archive `source` yields into the empty directory `dst`, with the checks of
/// extract_archive; `name` names the stream in messages.
Expected<core::TreeStats> extract_archive_from(const ArchiveSource& source, const std::string& name,
                                               const std::string& dst, const std::atomic<bool>& stop);

/// Pack `src` as `top_name/...` into `out` (the caller renames it into place); zstd frames
/// carry their checksum. `digest`: the stats' sha256 is the file's SHA-256.
Expected<core::TreeStats> pack_tree(const std::string& src, const std::string& top_name, const std::string& out,
                                    core::ArchiveFormat format, const std::vector<std::string>& excludes,
                                    const core::ProgressFn& progress, const std::atomic<bool>& stop,
                                    bool digest = false);

/// Extract `archive` into the empty directory `dst`; see LocalTransfer::extract. The file is
/// verified to its end (compression layer, ARCHIVE.sha256) before this returns; the stats'
/// `checks` say what protected it. `max_bytes` > 0 refuses archives that hold more. `own`: an
/// archive yeet made of a tree on this node (--compress): modes kept, symlinks judged by text.
Expected<core::TreeStats> extract_archive(const std::string& archive, const std::string& dst,
                                          const core::ProgressFn& progress, const std::atomic<bool>& stop,
                                          unsigned long long max_bytes = 0, bool own = false);

/// Whether a relative symlink at `entry_path` pointing to `target` stays inside the tree, read
/// by its text alone (extraction also resolves it through the tree's other links).
[[nodiscard]] bool symlink_stays_inside(const std::string& entry_path, const std::string& target);

}  // namespace ezpz::sys
