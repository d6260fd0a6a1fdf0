// The head's incremental yeet when its source changed a little: the new tree is the previous
// copy (hard links) plus exactly what the source check (estimate_changes) found, and its
// manifest the previous one plus what was touched. No second walk of the source, of the copy or
// of the new tree: what a 1% change costs is about what changed.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "core/base/expected.hpp"
#include "core/yeet/manifest.hpp"
#include "core/yeet/transfer.hpp"

namespace ezpz::sys {

/// `out` (an empty directory) = the copy at `dst` (which `held` describes: held_manifest
/// checked it) as hard links (dst's spare brought up to it when it has one: take_spare), with
/// `changes` (estimate_changes of `source` against `held`) brought over: the gone entries
/// removed, the changed ones copied from `source` (files as new inodes: `dst` is never written
/// to). Directories it wrote in get their source's mode and mtime. The totals are the new
/// tree's; copied_files and deleted what changed.
[[nodiscard]] Expected<core::TreeStats> sync_changes(const std::string& source, const std::string& dst,
                                                     const core::HeldManifest& held,
                                                     const core::ChangeEstimate& changes, const std::string& out,
                                                     const core::ProgressFn& progress, const std::atomic<bool>& stop);

/// The manifest of `root` written there: `base`'s entries, less `gone` (and what lies under
/// them), with each of `touched` and its parent directories as they are now in `root` (a file
/// hashed, its source size and mtime from `source_root`). What build_manifest would say of a
/// tree that is `base`'s copy but for those paths.
[[nodiscard]] Expected<core::HeldManifest> update_manifest(const std::string& root, const core::HeldManifest& base,
                                                           const std::string& source_root,
                                                           const std::vector<std::string>& touched,
                                                           const std::vector<std::string>& gone);

}  // namespace ezpz::sys
