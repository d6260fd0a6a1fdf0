// What `ezpz self-update` (and install.sh) decide before a byte is replaced, as data: which
// release file to fetch from a SHA256SUMS, whether a version is newer, whether a URL may be used,
// whether this runs inside a batch job. Pure: cli/self_update fetches and replaces.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/env.hpp"
#include "core/base/expected.hpp"

namespace ezpz::core {

/// Where releases are published (their SHA256SUMS, tarballs and install.sh) unless --base-url or
/// EZPZ_INSTALL_BASE_URL says otherwise.
inline constexpr std::string_view kDefaultReleaseUrl = "https://github.com/saforem2/ezpz/releases/latest/download";

/// One line of a SHA256SUMS file: `<64 hex digits>  <file name>`.
struct ReleaseFile {
  std::string sha256;
  std::string name;
};
/// The well-formed lines of a SHA256SUMS file (others are ignored).
[[nodiscard]] std::vector<ReleaseFile> parse_sha256sums(std::string_view text);

/// Compare dotted version numbers component by component (0.10.0 > 0.9.1; 1.0 == 1.0.0): <0, 0, >0.
[[nodiscard]] int compare_versions(std::string_view a, std::string_view b);

/// The tarball a machine of `arch` gets: ezpz-VERSION-linux-ARCH.tar.gz for `want`, else the
/// newest version listed. Errors name what SHA256SUMS (`where`) lacks.
struct ReleaseChoice {
  std::string version;
  std::string name;
  std::string sha256;
};
[[nodiscard]] Expected<ReleaseChoice> choose_release(const std::vector<ReleaseFile>& files, const std::string& arch,
                                                     const std::optional<std::string>& want, const std::string& where);

/// HTTPS; plain HTTP only to this machine (127.0.0.0/8, [::1], localhost): a test server, a mirror
/// through a tunnel. Anything else is refused with the fix.
[[nodiscard]] Expected<void> check_release_url(std::string_view url);

/// The signature of SHA256SUMS beside it: 64 bytes, Ed25519 (`openssl pkeyutl -sign -rawin`).
inline constexpr std::string_view kSignatureName = "SHA256SUMS.sig";

/// The Ed25519 public key releases must be signed with, as 64 lowercase hex digits: the one in
/// EZPZ_RELEASE_PUBLIC_KEY (a site's pin, set in its module or profile) over the one the build
/// embedded (`cmake -DEZPZ_RELEASE_PUBLIC_KEY=HEX`; `embedded` is anything else when none was),
/// nullopt when neither: then no signature is checked. A malformed variable is an error, never ignored.
[[nodiscard]] Expected<std::optional<std::string>> release_key(std::string_view embedded,
                                                               const std::optional<std::string>& variable);

/// `NAME=VALUE` of the batch-job variable set here (SLURM_JOB_ID, PBS_JOBID), "" outside a job.
[[nodiscard]] std::string batch_job_variable(const Env& env);

/// The argv that downloads `url` to `file` with `tool` (a path ending in curl or wget): fails on
/// an HTTP error, quiet but for the error.
[[nodiscard]] std::vector<std::string> fetch_argv(const std::string& tool, const std::string& url,
                                                  const std::string& file);

}  // namespace ezpz::core
