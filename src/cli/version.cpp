#include "cli/version.hpp"

#include "ezpz/version_info.hpp"

namespace ezpz::cli {

extern const char kVersionStamp[];
extern const char kReleaseKeyStamp[];  // cli/version_stamp.cpp
namespace {

constexpr const char* kArch =
#if defined(__x86_64__)
    "x86_64";
#elif defined(__aarch64__)
    "aarch64";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    "ppc64le";
#else
    "unknown-arch";
#endif

#ifdef EZPZ_STATIC_BUILD
constexpr const char* kLinkage = "static";
#else
constexpr const char* kLinkage = "dynamic";
#endif

}  // namespace

std::string_view version_number() {
  return kVersionStamp;
}

std::string_view embedded_release_key() {
  constexpr std::string_view kTag = "ezpz-release-key:";
  return std::string_view(kReleaseKeyStamp).substr(kTag.size());
}

std::string_view build_arch() {
  return kArch;
}

std::string version_text() {
  return "ezpz " + std::string(version_number()) + " (commit " + EZPZ_COMMIT + ", built " + EZPZ_BUILD_DATE + ", " +
         kLinkage + ", " + kArch + ")";
}

}  // namespace ezpz::cli
