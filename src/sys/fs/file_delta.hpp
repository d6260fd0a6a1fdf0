// A file's delta against its previous version, in librsync's format (what every node applies
// with rs_patch_file): by comparing blocks when the file was edited in place or appended to,
// else by librsync's signature and search. Both versions are on this node (the head's previous
// copy and its new one).
#pragma once

#include <string>

#include "core/base/expected.hpp"

namespace ezpz::sys {

/// The delta that turns `old_path` into `new_path`, written to `delta_path`; its size.
[[nodiscard]] Expected<unsigned long long> make_delta(const std::string& old_path, const std::string& new_path,
                                                      const std::string& delta_path);

/// `out` (a new file: never one that exists) = `basis` with the delta at `delta` applied
/// (librsync); the SHA-256 (hex) of what it wrote there, taken as it wrote it.
[[nodiscard]] Expected<std::string> apply_delta(const std::string& basis, const std::string& delta,
                                                const std::string& out);

}  // namespace ezpz::sys
