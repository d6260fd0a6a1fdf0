#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <string>
#include <tuple>

#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>

#include "sys/fs/archive.hpp"

using ezpz::sys::symlink_stays_inside;
namespace fs = std::filesystem;

TEST_CASE("symlink_stays_inside: the link's own directory depth", "[archive]") {
  CHECK(symlink_stays_inside("env/bin/a", "../lib/a.py"));
  CHECK(symlink_stays_inside("env/bin/a", "../../x"));
  CHECK_FALSE(symlink_stays_inside("env/bin/a", "../../../x"));
  CHECK(symlink_stays_inside("a", "/usr/bin/python3"));  // absolute: kept, never followed
  CHECK_FALSE(symlink_stays_inside("a", ".."));
  CHECK_FALSE(symlink_stays_inside("a/b", "x/../../.."));
}

TEST_CASE("symlink_stays_inside: '.' and empty components add no depth (fuzz finding)", "[archive]") {
  // "./link" sits in the top directory: "../x" from there leaves the tree. The depth used to be
  // counted by slashes, so "./link", "a//link" and "a/./link" looked one level deeper than they are.
  CHECK_FALSE(symlink_stays_inside("./link", "../escape"));
  CHECK_FALSE(symlink_stays_inside("a//link", "../../escape"));
  CHECK_FALSE(symlink_stays_inside("a/./link", "../../escape"));
  CHECK_FALSE(symlink_stays_inside("././././link", "../../../../x"));
  CHECK(symlink_stays_inside("./a/link", "../b"));
  CHECK(symlink_stays_inside("a//link", "../b"));
  CHECK_FALSE(symlink_stays_inside("a/../b/link", "../x"));  // '..' in the entry: never inside
}

namespace {
/// A tar in memory holding one symlink entry NAME -> TARGET.
std::string tar_with_symlink(const std::string& name, const std::string& target) {
  std::string out;
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  archive_write_open(
      a, &out, nullptr,
      [](archive*, void* data, const void* buf, size_t n) -> la_ssize_t {
        static_cast<std::string*>(data)->append(static_cast<const char*>(buf), n);
        return static_cast<la_ssize_t>(n);
      },
      nullptr);
  archive_entry* e = archive_entry_new();
  archive_entry_set_pathname(e, name.c_str());
  archive_entry_set_filetype(e, AE_IFLNK);
  archive_entry_set_perm(e, 0777);
  archive_entry_set_symlink(e, target.c_str());
  archive_write_header(a, e);
  archive_entry_free(e);
  archive_write_close(a);
  archive_write_free(a);
  return out;
}
}  // namespace

TEST_CASE("extraction refuses './link -> ../escape'", "[archive]") {
  const auto dir = fs::temp_directory_path() / ("ezpz-test-archive-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "out");
  for (const auto& [name, target, ok] : {std::tuple{"./link", "../escape", false},
                                         {"sub//link", "../../x", false},
                                         {"./sub/a/link", "../inside", true},
                                         // yeet's own stream: links by their text, inside the
                                         // extraction directory (a tarball source is also checked
                                         // against its lifted top: test_extract_guard).
                                         {"./sub/link", "../inside", true}}) {
    INFO(name << " -> " << target);
    const auto bytes = tar_with_symlink(name, target);
    bool served = false;
    ezpz::sys::ArchiveSource source = [&]() -> std::optional<std::string_view> {
      if (served) {
        return std::string_view();
      }
      served = true;
      return std::string_view(bytes);
    };
    std::atomic<bool> stop{false};
    auto r = ezpz::sys::extract_archive_from(source, "test", (dir / "out").string(), stop);
    CHECK(static_cast<bool>(r) == ok);
    if (!ok) {
      REQUIRE_FALSE(r);
      CHECK_THAT(r.error().message, Catch::Contains("leads outside the destination"));
    }
    fs::remove_all(dir / "out");
    fs::create_directories(dir / "out");
  }
  fs::remove_all(dir);
}
