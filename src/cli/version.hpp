// What `ezpz --version` (and -V) prints: the version, the commit and build date, how the binary
// is linked and for which machine: what a bug report needs.
#pragma once

#include <string>
#include <string_view>

namespace ezpz::cli {

/// `ezpz 0.1.0 (commit 0123456789ab, built 2026-11-25, static, x86_64)`; the commit is
/// `unknown` outside a git checkout and ends in `+dirty` when the tree had changes.
std::string version_text();
/// This binary's version number (0.1.0): read from one place in its data (cli/version_stamp.cpp).
std::string_view version_number();
/// The Ed25519 key this build's releases are signed with (64 hex digits), or 64 dots when the build
/// embedded none (EZPZ_RELEASE_PUBLIC_KEY): read from the binary's data, like the version.
std::string_view embedded_release_key();
/// The architecture this binary was built for (x86_64, aarch64, ...): its release tarball's.
std::string_view build_arch();

}  // namespace ezpz::cli
