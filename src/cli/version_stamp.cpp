// The version, once, as a string in the binary's data, read at run time (a translation unit of its
// own: the compiler cannot fold it into the code that prints it). Everything that reports ezpz's
// version reads it through cli::version_number(). Beside it, the release key the build embedded
// (EZPZ_RELEASE_PUBLIC_KEY; 64 dots when none), read through cli::embedded_release_key().
#include "ezpz/version.hpp"

namespace ezpz::cli {

extern const char kVersionStamp[];
const char kVersionStamp[] = EZPZ_VERSION;

extern const char kReleaseKeyStamp[];
const char kReleaseKeyStamp[] = "ezpz-release-key:" EZPZ_RELEASE_KEY;

}  // namespace ezpz::cli
