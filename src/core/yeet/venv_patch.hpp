// Moving a Python environment: which files name the old prefix and what they become.
// Pure text in, text out; sys/ reads the files and writes the results.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ezpz::core {

/// Replace every `old_prefix` that ends at a path boundary (end, '/', quote, space, ...)
/// so "/tmp/env" does not match inside "/tmp/env2". Returns nullopt when nothing matched.
[[nodiscard]] std::optional<std::string> replace_prefix(std::string_view text, std::string_view old_prefix,
                                                        std::string_view new_prefix);

/// The venv's prefix as recorded in bin/activate (VIRTUAL_ENV=... or VIRTUAL_ENV='...').
[[nodiscard]] std::optional<std::string> activate_prefix(std::string_view activate_text);

/// An activate script (bash, csh, fish) with its VIRTUAL_ENV assignment pointed at the new
/// prefix, quoted for the shell whatever characters it has; other lines get replace_prefix.
/// nullopt when nothing changed.
[[nodiscard]] std::optional<std::string> rewrite_activate(std::string_view text,
                                                          const std::vector<std::string>& old_prefixes,
                                                          std::string_view new_prefix);

/// `s` in single quotes, a quote written as '"'"' (bash, sh, csh and fish all read it).
[[nodiscard]] std::string shell_single_quote(std::string_view s);

/// Files in bin/ that carry the prefix as text: the activate scripts and pyvenv.cfg (a path
/// relative to the env root), matched case-insensitively (venv writes Activate.ps1).
[[nodiscard]] bool is_venv_text_file(std::string_view name);

/// Whether a script starts with #! and names `old_prefix` in its first three lines (the #!
/// line, or the exec line pip writes under "#!/bin/sh" for long paths).
[[nodiscard]] bool shebang_names(std::string_view text, std::string_view old_prefix);

/// A symlink target under the old prefix, moved under the new one; nullopt when it points elsewhere.
[[nodiscard]] std::optional<std::string> relink_target(std::string_view target, std::string_view old_prefix,
                                                       std::string_view new_prefix);

/// Whether file content is binary (has a NUL byte): conda's rule for text vs binary prefixes.
[[nodiscard]] bool looks_binary(std::string_view content);

/// What patching did, for the summary and --json.
struct PatchReport {
  std::vector<std::string> rewritten;      ///< files whose text now names the new prefix
  std::vector<std::string> relinked;       ///< symlinks moved under the new prefix
  std::vector<std::string> binary_prefix;  ///< binaries that embed the old prefix (left untouched)
  std::string old_prefix;
};

}  // namespace ezpz::core

namespace ezpz::core {

/// A script whose #! line (after patching) names an interpreter under `prefix` that the
/// kernel cannot run directly (a space in the path, or a line over 127 bytes) gets the
/// form pip/distlib use for such paths:
///   #!/bin/sh
///   '''exec' "/new prefix/bin/python" "$0" "$@"
///   ' '''
/// nullopt when the #! line is fine as it is.
[[nodiscard]] std::optional<std::string> portable_shebang(std::string_view script, std::string_view prefix);

}  // namespace ezpz::core
