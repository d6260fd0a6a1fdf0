// A yeet copy cloned as hard links (the start of every incremental update: the previous tree is
// never written to), optionally checked against its manifest in the same walk.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/base/expected.hpp"
#include "core/yeet/manifest.hpp"

namespace ezpz::sys {

/// Directories (relative path, mode) made with owner rwx added, to be given their own mode once
/// the tree is filled (restore_modes).
using DirModes = std::vector<std::pair<std::string, unsigned>>;

/// `staging` (an empty directory) = `dst` as hard links (directories and symlinks made anew, with
/// their modes and a symlink's times), its manifest files and `manifest`'s ignored names aside.
/// `dst` is never written to. Directories without owner rwx get it until restore_modes (what it
/// returns).
[[nodiscard]] Expected<DirModes> clone_as_links(const std::string& dst, const core::Manifest& manifest,
                                                const std::string& staging);

/// The first entry of `m` that the tree at `root` lacks ("PATH is missing"), named as
/// tree_divergence names it: what a walk that saw fewer entries than `m` lists reports.
[[nodiscard]] std::string first_missing(const core::Manifest& m, const std::string& root);

/// Each of `narrowed`'s directories under `root` that still is one gets its mode, deepest first
/// (those named in `except` were replaced and have theirs).
[[nodiscard]] Expected<void> restore_modes(const std::string& root, const DirModes& narrowed,
                                           const std::vector<std::string>& except);

/// A node's copy, checked against its manifest and cloned (clone_checked).
struct ClonedCopy {
  core::HeldManifest held;  ///< the manifest the copy holds, its digest and text
  DirModes narrowed;        ///< clone_as_links'
  double check_s = 0;       ///< reading the manifest
  double clone_s = 0;       ///< the walk that checked and cloned
  double waited_s = 0;      ///< how long its user waited for it (made in the background)
  bool from_spare = false;  ///< made from the destination's spare (take_spare), not cloned
};

/// `out` (made here, 0700) = the copy at `dst` as hard links, checked in the same walk against
/// the manifest it holds: what held_manifest and clone_as_links do, one walk instead of two. An
/// error (of kind needs_full_copy when the copy is not what its manifest says, or its manifest's
/// SHA-256 is not `base_digest` when one is given) leaves nothing at `out`.
[[nodiscard]] Expected<ClonedCopy> clone_checked(const std::string& dst, const std::string& base_digest,
                                                 const std::string& out);

/// `out` (an empty directory) = the copy at `dst` as hard links, checked against the manifest it
/// holds (whose SHA-256 must be `base_digest` when one is given): dst's spare brought up to it
/// when it has one (the copy checked by a walk that writes nothing: copy_divergence), else
/// clone_checked. An error leaves `out` empty, as clone_checked's do.
[[nodiscard]] Expected<ClonedCopy> ready_copy(const std::string& dst, const std::string& base_digest,
                                              const std::string& out);

/// ready_copy into `out`, made here (0700): nothing left there when it fails. What a relay
/// does when the head announces a delta from the manifest `base_digest`.
[[nodiscard]] Expected<ClonedCopy> clone_held(const std::string& dst, const std::string& base_digest,
                                              const std::string& out);

}  // namespace ezpz::sys
