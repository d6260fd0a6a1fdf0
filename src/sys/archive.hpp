// Tar archives with libarchive: pack a tree (zstd, multithreaded, or gzip) and extract
// one safely. Only tar/pax and the none/gzip/zstd filters are registered.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "core/expected.hpp"
#include "core/transfer.hpp"

namespace ezpz::sys {

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
