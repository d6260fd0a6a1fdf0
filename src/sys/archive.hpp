// Tar archives with libarchive: pack a tree (zstd, multithreaded, or gzip) and extract
// one safely. Only tar/pax and the none/gzip/zstd filters are registered.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"
#include "core/transfer.hpp"

namespace ezpz::sys {

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

/// Pack `src` as `top_name/...` into `out` (the caller renames it into place).
Expected<core::TreeStats> pack_tree(const std::string& src, const std::string& top_name, const std::string& out,
                                    core::ArchiveFormat format, const std::vector<std::string>& excludes,
                                    const core::ProgressFn& progress, const std::atomic<bool>& stop);

/// Extract `archive` into the empty directory `dst`; see LocalTransfer::extract.
Expected<core::TreeStats> extract_archive(const std::string& archive, const std::string& dst,
                                          const core::ProgressFn& progress, const std::atomic<bool>& stop);

/// Whether a relative symlink at `entry_path` pointing to `target` stays inside the tree.
[[nodiscard]] bool symlink_stays_inside(const std::string& entry_path, const std::string& target);

}  // namespace ezpz::sys
