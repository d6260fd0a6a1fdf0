// Directories and files made where other users can plant names (docs/security.md): below a
// directory anyone may write (/tmp), what ezpz makes is private, and what it reuses must be the
// user's own (or root's) and writable by no one else.
#pragma once

#include <string>

#include <sys/types.h>

#include "core/base/expected.hpp"

namespace ezpz::sys {

/// The login name of `uid` (its number when it has none).
[[nodiscard]] std::string user_name(uid_t uid);

/// This process's umask, read without changing it (/proc/self/status; 022 where it cannot be read).
[[nodiscard]] mode_t current_umask();

/// `mkdir -p dir`, safely. Missing directories are made 0755 (`shared_mode`, 0700 by default, below
/// a directory anyone may write). Below such a directory, each one that exists (or a symlink to it)
/// must be this user's or root's, and writable by no one else unless it is sticky: otherwise
/// another user could rename it and put her own in its place. Refusals name the owner and the fix.
[[nodiscard]] Expected<void> make_dirs_safely(const std::string& dir, mode_t shared_mode = 0700);

/// Why a work directory (a name with this process's id) could not be made, from errno: another
/// user's entry of that name is named, with her name; else the reason and what to check.
[[nodiscard]] std::string work_dir_error(const std::string& path);

/// A new directory `prefix` + ".XXXXXX" (mkdtemp: no one could have made it in advance, mode 0700).
[[nodiscard]] Expected<std::string> make_private_dir(const std::string& prefix);

/// Write `text` to `path` atomically: a new temporary file beside it (O_EXCL, a name no one could
/// have planted), given the user's usual mode (umask), then renamed over `path`.
[[nodiscard]] Expected<void> write_file_atomically(const std::string& path, const std::string& text);

/// The symlink `path` made to point at `target`: a new link (symlink makes it or fails, so no
/// one's planted file is written through) renamed over it. An Error when `path` is not a link.
[[nodiscard]] Expected<void> point_link(const std::string& path, const std::string& target);

}  // namespace ezpz::sys
