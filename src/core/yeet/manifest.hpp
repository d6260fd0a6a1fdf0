// What a yeet destination holds, file by file: written beside the tree as .ezpz-manifest by
// every completed yeet, so a later yeet sends only what changed (a delta bundle) and a node can
// tell whether its copy is still the one the manifest describes. Pure data; sys/ builds them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/expected.hpp"

namespace ezpz::core {

/// The manifest's name inside the destination, and files there that are not part of the tree.
inline constexpr std::string_view kManifestName = ".ezpz-manifest";
inline constexpr std::string_view kFailedNodesName = ".ezpz-yeet-failed-nodes.txt";
/// yeet's mark on every copy it makes (one JSON line: the source, when, which ezpz): the
/// destination is yeet's to replace next time. Not part of the tree (nor of its manifest).
inline constexpr std::string_view kYeetMarkerName = ".ezpz-yeet";
/// The marker's line: {"ezpz_yeet":1,"source":...,"time":...,"version":...}.
[[nodiscard]] std::string yeet_marker_text(const std::string& source, long long epoch_s, std::string_view version);
/// The directory inside a delta bundle that holds its header and librsync deltas.
inline constexpr std::string_view kDeltaDirName = ".ezpz-delta";
/// How a node that cannot apply a delta bundle starts its error: the head then sends it everything.
inline constexpr std::string_view kNeedsFullCopy = "needs a full copy: ";

/// A relative path without empty, "." or ".." components (what manifests and bundles may name).
[[nodiscard]] bool safe_relative_path(std::string_view path);

struct ManifestEntry {
  std::string path;  ///< relative, '/'-separated
  char type = 'f';   ///< f(ile), d(irectory), l(ink)
  unsigned mode = 0;
  unsigned long long size = 0;
  long long mtime_ns = 0;
  std::string digest;  ///< SHA-256 hex of a file's content
  std::string link;    ///< a symlink's target
  // The source file it came from (size, mtime): what --dry-run compares the source against.
  unsigned long long src_size = 0;
  long long src_mtime_ns = 0;
  bool operator==(const ManifestEntry&) const = default;
};

struct Manifest {
  std::map<std::string, ManifestEntry> entries;  ///< by path
  /// Names yeet skipped (e.g. __pycache__, which running python creates on the nodes): never
  /// part of the tree, wherever they appear.
  std::vector<std::string> ignore;
};

[[nodiscard]] std::string encode_manifest(const Manifest& m);
[[nodiscard]] Expected<Manifest> decode_manifest(std::string_view text);
/// A text that decodes to `m`, as encode_manifest's, reusing the lines of `old_text` (which
/// decodes to `old`) for the entries `m` has unchanged: the head writes a 1% change's manifest
/// without encoding the other 99%.
[[nodiscard]] std::string encode_manifest_reusing(const Manifest& m, const Manifest& old, std::string_view old_text);
/// How a manifest's text differs from an earlier one's, line by line: the entries of its new and
/// changed lines, the paths it no longer lists; or, when the header differs (another ignore
/// list) or the lines are out of order, the new manifest decoded whole.
struct ManifestChanges {
  std::map<std::string, ManifestEntry> set;
  std::vector<std::string> gone;
  std::optional<Manifest> whole;
};
/// A node reads a delta's new manifest this way: only the lines that differ are decoded.
[[nodiscard]] Expected<ManifestChanges> manifest_changes(std::string_view old_text, std::string_view new_text);
/// decode_manifest(new_text) when `old` is decode_manifest(old_text), decoding only the lines
/// that differ (a node reads a delta's new manifest in a tenth of the time).
[[nodiscard]] Expected<Manifest> patch_manifest(const Manifest& old, std::string_view old_text,
                                                std::string_view new_text);

/// Whether `entry` and `other` describe the same content and metadata (not the src_* fields).
[[nodiscard]] bool same_content(const ManifestEntry& entry, const ManifestEntry& other);

/// What turns `old` into `now`.
struct ManifestDiff {
  std::vector<std::string> removed;  ///< paths in old only (a removed directory's contents listed too)
  std::vector<std::string> added;    ///< paths in now only
  std::vector<std::string> changed;  ///< in both, different (type, size, mode, mtime, digest or target)
};
[[nodiscard]] ManifestDiff diff_manifests(const Manifest& old, const Manifest& now);

/// A tree on disk as stat sees it (no digests), to check against a manifest.
struct StatEntry {
  char type = 'f';
  unsigned mode = 0;
  unsigned long long size = 0;
  long long mtime_ns = 0;
  std::string link;
};
/// Whether the tree entry `s` is what the manifest entry `e` says: type, mode, a file's size and
/// mtime to the second (the stream, a tar, carries whole seconds), a symlink's target.
[[nodiscard]] bool stat_matches(const ManifestEntry& e, const StatEntry& s);
/// The first difference between a tree and its manifest ("FILE changed", "FILE is new",
/// "FILE is missing"), or "" when the tree is what the manifest says (mtimes to the second).
[[nodiscard]] std::string tree_divergence(const Manifest& m, const std::map<std::string, StatEntry>& tree);

/// After a delta was applied to a clone of a copy that matched `old`: the first difference
/// between the result and `now`, or "" when it is what `now` says. Only the `touched` paths
/// (removed, sent, patched) are on disk as `touched_stats` says (absent ones missing there);
/// every other entry is the clone's, which `old` described, so it must be in `now` as it was
/// in `old`. What a walk of the whole tree would find, with a stat for each touched path only.
[[nodiscard]] std::string delta_divergence(const Manifest& old, const Manifest& now,
                                           const std::vector<std::string>& touched,
                                           const std::map<std::string, StatEntry>& touched_stats);

/// delta_divergence(old, now, ...) where `now` is `old` with `changes` (manifest_changes of
/// their texts): the same answer, without `now` made whole.
[[nodiscard]] std::string delta_divergence(const Manifest& old, const ManifestChanges& changes,
                                           const std::vector<std::string>& touched,
                                           const std::map<std::string, StatEntry>& touched_stats);

/// A manifest and the SHA-256 of its text (what nodes compare).
struct HeldManifest {
  Manifest manifest;
  std::string digest;
  std::string text;  ///< the manifest file's text (what `digest` is of)
};

/// What a delta bundle holds.
struct BundleStats {
  unsigned long long files = 0;  ///< entries sent whole (files, links, directories)
  unsigned long long bytes = 0;  ///< their file bytes
  unsigned long long deltas = 0;
  unsigned long long delta_bytes = 0;
  unsigned long long removed = 0;
};

/// What a source tree changed since the manifest, by size and mtime (--dry-run's estimate; when
/// it counts nothing, yeet keeps the copy as it is).
struct ChangeEstimate {
  unsigned long long files = 0;  ///< new or changed files
  unsigned long long bytes = 0;  ///< their size
  unsigned long long removed = 0;
  std::vector<std::string> changed;  ///< the source's new and changed entries, parents first
  std::vector<std::string> gone;     ///< the manifest's paths the source no longer has, sorted
};

/// The header of a delta bundle (kDeltaDirName/header.json).
struct DeltaHeader {
  std::string base_digest;  ///< SHA-256 of the manifest a node must hold to apply it
  std::string new_digest;   ///< SHA-256 of the manifest it produces
  std::vector<std::string> removed;
  std::map<std::string, std::string> deltas;  ///< path -> delta file name (in kDeltaDirName)
};
[[nodiscard]] std::string encode_delta_header(const DeltaHeader& h);
[[nodiscard]] Expected<DeltaHeader> decode_delta_header(std::string_view text);

}  // namespace ezpz::core
