#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scratch_dir.hpp"
#include "sys/fs/incremental.hpp"
#include "sys/fs/targeted_sync.hpp"
#include "sys/fs/tree.hpp"

namespace fs = std::filesystem;

namespace {

struct Scratch : ezpz::test::ScratchDir {
  Scratch() : ScratchDir("targeted") {}
};

/// `text` written at `path` with the mtime `second`.
void put(const fs::path& path, const std::string& text, long second = 1'700'000'000) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  const timespec times[2] = {{second, 0}, {second, 0}};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

/// The manifest of the tree at `root` (made by a walk of all of it), recording `source`'s sizes.
ezpz::core::Manifest walked(const fs::path& root, const fs::path& source) {
  return ezpz::sys::build_manifest(root.string(), nullptr, source.string(), {}).value();
}

/// Every entry of `want` is in `have` with the same content, mode and source size and mtime, and
/// `have` has no other (directories' mtimes aside: no manifest compares them).
void same_trees(const ezpz::core::Manifest& have, const ezpz::core::Manifest& want) {
  for (const auto& [path, e] : want.entries) {
    INFO(path);
    auto it = have.entries.find(path);
    REQUIRE(it != have.entries.end());
    CHECK(ezpz::core::same_content(it->second, e));
    CHECK(it->second.src_size == e.src_size);
    CHECK(it->second.src_mtime_ns == e.src_mtime_ns);
  }
  for (const auto& [path, e] : have.entries) {
    INFO(path);
    CHECK(want.entries.count(path) == 1);
  }
}

/// A source, its first copy (made whole, with its manifest) and a scratch directory for the next.
struct Synced {
  Scratch s;
  fs::path src = s.dir / "src";
  fs::path copy = s.dir / "copy";
  fs::path out = s.dir / "out";
  std::atomic<bool> stop{false};
  ezpz::core::HeldManifest base;

  Synced() {
    put(src / "bin/tool", "#!/usr/bin/env python\n");
    put(src / "lib/a.py", "a = 1\n");
    put(src / "lib/b.py", "b = 2\n");
    put(src / "lib/pkg/core.py", std::string(100'000, 'c'));
    put(src / "lib/pkg/data/table.txt", "rows\n");
    put(src / "lib/old/x.py", "x\n");
    put(src / "lib/old/deep/y.py", "y\n");
    put(src / "share/became_dir", "a file now\n");
    put(src / "share/became_file/inner.txt", "a directory now\n");
    put(src / "ro/kept.txt", "kept\n");
    fs::create_symlink("lib/a.py", src / "link");
    fs::permissions(src / "ro", fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                    fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
    REQUIRE(::mkdir(copy.c_str(), 0700) == 0);
    REQUIRE(ezpz::sys::copy_tree(src.string(), copy.string(), {}, nullptr, stop));
    base = ezpz::sys::write_manifest(copy.string(), nullptr, src.string(), {}).value();
    REQUIRE(::mkdir(out.c_str(), 0700) == 0);
  }

  /// The source's changes since the copy, brought over into `out`, and its manifest updated.
  std::pair<ezpz::core::TreeStats, ezpz::core::HeldManifest> sync(const std::vector<std::string>& patched = {}) {
    const auto changes = ezpz::sys::estimate_changes(src.string(), {}, base.manifest).value();
    auto stats = ezpz::sys::sync_changes(src.string(), copy.string(), base, changes, out.string(), nullptr, stop);
    REQUIRE(stats);
    auto touched = changes.changed;
    touched.insert(touched.end(), patched.begin(), patched.end());
    auto m = ezpz::sys::update_manifest(out.string(), base, src.string(), touched, changes.gone);
    REQUIRE(m);
    return {*stats, *m};
  }
};

}  // namespace

TEST_CASE("a source's changes on the previous copy give the tree a whole copy gives, and its manifest",
          "[targeted_sync]") {
  Synced t;
  // Edited, touched, new (in a new directory and in a read-only one), removed (a directory with
  // a subdirectory), a file become a directory and back, a symlink moved, modes changed.
  put(t.src / "lib/a.py", "a = 1000\n", 1'700'000'100);
  put(t.src / "lib/b.py", "b = 2\n", 1'700'000'200);
  put(t.src / "lib/newpkg/sub/n.py", "n\n");
  fs::permissions(t.src / "ro", fs::perms::owner_write, fs::perm_options::add);
  put(t.src / "ro/new.txt", "new\n");
  fs::permissions(t.src / "ro", fs::perms::owner_write, fs::perm_options::remove);
  fs::remove_all(t.src / "lib/old");
  fs::remove(t.src / "share/became_dir");
  put(t.src / "share/became_dir/inside.txt", "inside\n");
  fs::remove_all(t.src / "share/became_file");
  put(t.src / "share/became_file", "a file again\n");
  fs::remove(t.src / "link");
  fs::create_symlink("lib/b.py", t.src / "link");
  fs::permissions(t.src / "bin/tool", fs::perms::owner_exec, fs::perm_options::add);
  fs::permissions(t.src / "lib/pkg", fs::perms::group_write, fs::perm_options::add);
  REQUIRE(::mkfifo((t.src / "lib/pipe").c_str(), 0600) == 0);  // never copied

  const auto [stats, m] = t.sync();

  // The tree and its manifest are what a whole copy and a walk of it give.
  const auto whole = t.s.dir / "whole";
  REQUIRE(::mkdir(whole.c_str(), 0700) == 0);
  REQUIRE(ezpz::sys::copy_tree(t.src.string(), whole.string(), {}, nullptr, t.stop));
  same_trees(walked(t.out, t.src), walked(whole, t.src));
  same_trees(m.manifest, walked(t.out, t.src));
  CHECK(ezpz::sys::held_manifest(t.out.string()).value().digest == m.digest);  // the tree is what it says
  CHECK((fs::status(t.out / "ro").permissions() & fs::perms::owner_write) == fs::perms::none);
  CHECK((fs::status(t.out / "lib/pkg").permissions() & fs::perms::group_write) != fs::perms::none);
  // What it counted: the new tree's totals, what it copied and removed.
  unsigned long long files = 0;
  for (const auto& [path, e] : walked(whole, t.src).entries) {
    files += e.type == 'f' ? 1 : 0;
  }
  CHECK(stats.files == files);
  CHECK(stats.copied_files == 7);  // a.py, b.py, n.py, new.txt, inside.txt, became_file, tool
  CHECK(stats.deleted == 2);       // lib/old with what was in it, became_file's inner.txt
  CHECK(stats.skipped == 1);
  CHECK(stats.first_skipped == "lib/pipe");
  // The previous copy was not written to.
  const auto again = ezpz::sys::held_manifest(t.copy.string());
  REQUIRE(again);
  CHECK(again->digest == t.base.digest);
  CHECK(fs::read_symlink(t.copy / "link") == "lib/a.py");
}

TEST_CASE("files rewritten after the sync are in the updated manifest as they are", "[targeted_sync]") {
  Synced t;
  put(t.src / "lib/a.py", "a = 3\n", 1'700'000'100);
  const auto changes = ezpz::sys::estimate_changes(t.src.string(), {}, t.base.manifest).value();
  REQUIRE(ezpz::sys::sync_changes(t.src.string(), t.copy.string(), t.base, changes, t.out.string(), nullptr, t.stop));
  // A moved env's patch: a new file in place of one the copy shares with the previous tree.
  REQUIRE(ezpz::sys::replace_file((t.out / "bin/tool").string(), "#!/new/place/bin/python\n", 0755));
  auto touched = changes.changed;
  touched.emplace_back("bin/tool");
  const auto m = ezpz::sys::update_manifest(t.out.string(), t.base, t.src.string(), touched, changes.gone);
  REQUIRE(m);
  same_trees(m->manifest, walked(t.out, t.src));
  CHECK(m->manifest.entries.at("bin/tool").src_size == t.base.manifest.entries.at("bin/tool").src_size);
  CHECK(ezpz::sys::held_manifest(t.out.string()).value().digest == m->digest);
  CHECK(ezpz::sys::held_manifest(t.copy.string()).value().digest == t.base.digest);
}

TEST_CASE("nothing changed: the copy again, with the same manifest", "[targeted_sync]") {
  Synced t;
  const auto [stats, m] = t.sync();
  CHECK(stats.copied_files == 0);
  CHECK(stats.deleted == 0);
  CHECK(m.digest == t.base.digest);
}

TEST_CASE("a changed file is written beside itself under a name no entry of the tree has", "[targeted_sync]") {
  Synced t;
  put(t.src / "lib/a.py.ezpz-new", "an entry of the source\n");
  t.base = [&] {
    fs::remove_all(t.copy);
    REQUIRE(::mkdir(t.copy.c_str(), 0700) == 0);
    REQUIRE(ezpz::sys::copy_tree(t.src.string(), t.copy.string(), {}, nullptr, t.stop));
    return ezpz::sys::write_manifest(t.copy.string(), nullptr, t.src.string(), {}).value();
  }();
  put(t.src / "lib/a.py", "a = 4\n", 1'700'000'100);
  const auto [stats, m] = t.sync();
  CHECK(stats.copied_files == 1);
  same_trees(walked(t.out, t.src), walked(t.src, t.src));
  CHECK(ezpz::sys::held_manifest(t.out.string()).value().digest == m.digest);
}
