// The version, once, as a string in the binary's data, read at run time (a translation unit of its
// own: the compiler cannot fold it into the code that prints it). Everything that reports ezpz's
// version reads it through cli::version_number().
#include "ezpz/version.hpp"

namespace ezpz::cli {

extern const char kVersionStamp[];
const char kVersionStamp[] = EZPZ_VERSION;

}  // namespace ezpz::cli
