// Incremental yeet on the filesystem: manifests of trees (SHA-256 per file), delta bundles
// (changed files whole, or as librsync deltas against the previous copy), and applying a bundle
// on a node into a staging tree built from hard links of its current copy.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/expected.hpp"
#include "core/yeet/manifest.hpp"
#include "core/yeet/transfer.hpp"
#include "sys/fs/clone.hpp"
#include "sys/fs/tree.hpp"

namespace ezpz::sys {

/// This copy cannot take the delta (core::kNeedsFullCopy, `why`): the head sends it the whole tree.
[[nodiscard]] Error needs_full_copy(const std::string& why);

[[nodiscard]] std::string text_sha256(std::string_view text);
[[nodiscard]] Expected<std::string> file_sha256(const std::string& path);

/// An entry as a manifest records it (type, mode, size of a file, mtime, a symlink's target).
[[nodiscard]] core::StatEntry stat_entry(const TreeEntry& e);
/// The same from what lstat said of it and, for a symlink, its target.
[[nodiscard]] core::StatEntry stat_entry(const struct stat& st, std::string link);

/// Whether `name`, at a copy's top, is one of the files that live there but are not part of its
/// tree (its manifest, the failed-nodes list, yeet's marker).
[[nodiscard]] bool not_tree(std::string_view name);

/// The manifest of the tree at `root` (its manifest and failed-nodes files left out). Digests
/// are reused from `reuse` for files whose size, mtime and mode match; with `source_root`, each
/// file's src_size/src_mtime come from the file of the same path there.
[[nodiscard]] Expected<core::Manifest> build_manifest(const std::string& root, const core::Manifest* reuse,
                                                      const std::string& source_root,
                                                      const std::vector<std::string>& ignore);

/// The tree at `root` as stat sees it (its manifest and failed-nodes files left out).
[[nodiscard]] Expected<std::map<std::string, core::StatEntry>> stat_tree(const std::string& root,
                                                                         const std::vector<std::string>& ignore);

/// The manifest `root` (this user's) holds, with its digest and text, the tree not looked at.
[[nodiscard]] Expected<core::HeldManifest> read_manifest(const std::string& root);

/// The manifest `root` holds, with its digest, when the tree still is what it says; else an
/// error naming the first difference.
[[nodiscard]] Expected<core::HeldManifest> held_manifest(const std::string& root);

/// Build the manifest of `root` (see build_manifest) and write it there as its manifest file.
[[nodiscard]] Expected<core::HeldManifest> write_manifest(const std::string& root, const core::Manifest* reuse,
                                                          const std::string& source_root,
                                                          const std::vector<std::string>& ignore);

/// How the source tree at `source` (skipping `excludes`) differs from the copy `m` describes:
/// files by `m`'s src_* fields (size, mtime: what the source had) and mode, directories and
/// symlinks by type, mode and target. None counted: the copy is the source's, as it is now.
[[nodiscard]] Expected<core::ChangeEstimate> estimate_changes(const std::string& source,
                                                              const std::vector<std::string>& excludes,
                                                              const core::Manifest& m);

/// Fill the new directory `bundle` with what turns `old_root` (manifest `old`, digest
/// `old_digest`) into `new_root` (manifest `now`, digest `now_digest`, already written as its
/// manifest file): new and changed entries (hard links to new_root's files), a librsync delta
/// for each changed file of at least 64 KiB when the delta is smaller, the header.
[[nodiscard]] Expected<core::BundleStats> make_bundle(const std::string& old_root, const core::Manifest& old,
                                                      const std::string& old_digest, const std::string& new_root,
                                                      const core::Manifest& now, const std::string& now_digest,
                                                      const std::string& bundle);

/// Whether the extracted stream in `dir` is a delta bundle (it has the delta header).
[[nodiscard]] bool is_bundle(const std::string& dir);

/// On a node: build in the empty directory `staging` (or the clone clone_held made: `cloned`) the tree
/// `bundle_dir` (an extracted bundle, consumed) makes of `dst`, and verify it against the new
/// manifest. An error starting with core::kNeedsFullCopy when `dst` is not the copy the bundle
/// was made against. Returns how long its steps took, and whether it changed nothing (`staging`
/// then left empty).
[[nodiscard]] Expected<core::BundleApplied> apply_bundle(const std::string& bundle_dir, const std::string& dst,
                                                         const std::string& staging,
                                                         const ClonedCopy* cloned = nullptr);

}  // namespace ezpz::sys
