// A destination's spare on disk (core/yeet/spare.hpp): taken as the start of an update, and
// settled after each commit (the replaced tree kept, or a twin of the new one made).
#pragma once

#include <optional>
#include <string>
#include <unordered_map>

#include <sys/types.h>

#include "core/base/expected.hpp"
#include "core/yeet/manifest.hpp"
#include "core/yeet/spare.hpp"
#include "sys/fs/clone.hpp"
#include "sys/fs/remove.hpp"

namespace ezpz::sys {

/// Each file of a checked copy, by its manifest entry: its inode.
using CopyInodes = std::unordered_map<const core::ManifestEntry*, ino_t>;

/// The first difference between the copy at `dst` and its manifest `m` as stat sees it ("PATH
/// changed", "PATH is new", "PATH is missing", an entry not this user's), "" for none: one walk,
/// nothing written, `m`'s ignored names skipped. With `inodes`, each file's inode is recorded
/// there (by its entry in `m`), for take_spare.
[[nodiscard]] std::string copy_divergence(const std::string& dst, const core::Manifest& m,
                                          CopyInodes* inodes = nullptr);

/// Whether `dst` has a spare this user could take: a directory of theirs, not a symlink.
[[nodiscard]] bool has_spare(const std::string& dst);

/// `out` (an empty directory, a work name) = the copy at `dst`, which `held` describes (the
/// caller checked it), made from dst's spare: moved to `out`, checked against its own manifest
/// as stat sees it (every entry, this user's), names `held` ignores removed, and what differs
/// from `held` linked over from `dst` (files as hard links, `dst` never written to).
/// Directories without owner rwx get it until restore_modes (the DirModes returned). Nullopt,
/// `out` empty again and the spare gone, when it cannot be used (none, another user's, not
/// what its manifest says, another kind of tree); the caller clones `dst` instead. With `known`
/// (copy_divergence's inodes, by entries of `held.manifest`), each of the spare's files that
/// both manifests list alike must be the copy's checked file itself (the same inode: a spare is
/// made of the copy's files), no stat needed; another file, even one stat cannot tell apart,
/// makes the spare unusable.
[[nodiscard]] Expected<std::optional<DirModes>> take_spare(const std::string& dst, const core::HeldManifest& held,
                                                           const std::string& out, const CopyInodes* known = nullptr);

/// What became of the tree a commit replaced.
struct Settled {
  std::string remove;  ///< the replaced tree, for the caller to remove ("" when it is the spare)
  Leftovers left;      ///< an earlier spare that could not be removed
};

/// After `dst` was replaced (`previous`: where the tree it held is now, "" for none): with
/// keep_as_spare, that tree becomes dst's spare; with replace, it is for the caller to remove
/// and, when the new tree holds a manifest, a twin of it (hard links, built at `twin_work`, a
/// work name) is the spare. A spare from before is removed first; one of another user's
/// (never touched) means none is kept. Failing to make a spare is not an error: none is kept.
[[nodiscard]] Settled settle_spare(const std::string& dst, const std::string& previous, core::Previous how,
                                   const std::string& twin_work);

}  // namespace ezpz::sys
