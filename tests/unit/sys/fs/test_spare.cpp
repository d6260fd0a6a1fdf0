#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/yeet/spare.hpp"
#include "scratch_dir.hpp"
#include "sys/fs/incremental.hpp"
#include "sys/fs/spare.hpp"
#include "sys/fs/tree.hpp"

namespace fs = std::filesystem;
using ezpz::ErrorKind;

namespace {

struct Scratch : ezpz::test::ScratchDir {
  Scratch() : ScratchDir("spare") {}
};

/// `text` written at `path` with the mtime `second` (whole seconds, as the stream carries).
void put(const fs::path& path, const std::string& text, long second = 1'700'000'000) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  const timespec times[2] = {{second, 0}, {second, 0}};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

ino_t inode(const fs::path& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_ino;
}

/// Every entry of the tree at `have` is what `want`'s manifest lists, and no other; each file is
/// `want`'s own (the same inode: linked, never copied).
void linked_copy_of(const fs::path& have, const fs::path& want, const ezpz::core::Manifest& m) {
  const auto walked = ezpz::sys::stat_tree(have.string(), m.ignore).value();
  CHECK(ezpz::core::tree_divergence(m, walked).empty());
  for (const auto& [path, e] : m.entries) {
    INFO(path);
    if (e.type == 'f') {
      CHECK(inode(have / path) == inode(want / path));
    }
  }
}

/// The tree every test starts from at `root`, its a.py holding `a` (written at the second `when`).
void plant(const fs::path& root, const std::string& a = "a = 1\n", long when = 1'700'000'000) {
  put(root / "bin/tool", "#!/usr/bin/env python\n");
  put(root / "lib/a.py", a, when);
  put(root / "lib/pkg/core.py", std::string(10'000, 'c'));
  put(root / "lib/pkg/data.txt", "rows\n");
  put(root / "ro/kept.txt", "kept\n");
  fs::create_symlink("lib/a.py", root / "link");
  fs::permissions(root / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  fs::permissions(root, fs::perms::owner_all);
}

/// A copy (`dst`, with its manifest) and an empty work directory beside it.
struct Copy {
  Scratch s;
  fs::path dst = s.dir / "env";
  fs::path spare = s.dir / "env.ezpz-spare";
  fs::path out = s.dir / "env.ezpz-tmp-1";
  ezpz::core::HeldManifest held;

  Copy() {
    plant(dst);
    held = write({"__pycache__"});
    REQUIRE(::mkdir(out.c_str(), 0700) == 0);
  }
  ~Copy() {
    for (const auto& root : {dst, spare, out}) {  // writable again, for the scratch's removal
      std::error_code ec;
      for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
           it.increment(ec)) {
        if (it->is_directory() && !it->is_symlink()) {
          fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
        }
      }
    }
  }
  ezpz::core::HeldManifest write(const std::vector<std::string>& ignore) {
    return ezpz::sys::write_manifest(dst.string(), nullptr, "", ignore).value();
  }
  /// The spare as a commit of a whole tree leaves it: a twin of the copy.
  void twin() {
    const auto settled = ezpz::sys::settle_spare(dst.string(), "", ezpz::core::Previous::replace,
                                                 (s.dir / "env.ezpz-tmp-9.spare").string());
    CHECK(settled.remove.empty());
    REQUIRE(fs::is_directory(spare));
    CHECK_FALSE(fs::exists(s.dir / "env.ezpz-tmp-9.spare"));
  }
};

}  // namespace

TEST_CASE("spare: a whole tree's twin is the next update's start, the copy's files linked, its modes kept", "[spare]") {
  Copy c;
  c.twin();
  CHECK(inode(c.spare / "lib/a.py") == inode(c.dst / "lib/a.py"));
  CHECK(fs::status(c.spare / "ro").permissions() == (fs::perms::owner_read | fs::perms::owner_exec));
  auto taken = ezpz::sys::take_spare(c.dst.string(), c.held, c.out.string());
  REQUIRE(taken);
  REQUIRE(taken->has_value());
  CHECK_FALSE(fs::exists(c.spare));
  // Writable where the update will write, until it gives the directories their modes back.
  REQUIRE((*taken)->size() == 1);
  CHECK((*taken)->front().first == "ro");
  REQUIRE(ezpz::sys::restore_modes(c.out.string(), **taken, {}));
  linked_copy_of(c.out, c.dst, c.held.manifest);
  CHECK_FALSE(fs::exists(c.out / ".ezpz-manifest"));  // as a clone: the update brings the new one
}

TEST_CASE("spare: an older tree is brought up to the copy, entry by entry, and stray python caches go", "[spare]") {
  Copy c;
  c.twin();
  // The copy moves on (as an update makes it: changed files are new inodes, the spare's stay as
  // they were): an edit, a new file in a new directory, a removed directory, a file become a
  // directory, a symlink moved, a mode changed.
  fs::remove(c.dst / "lib/a.py");
  put(c.dst / "lib/a.py", "a = 2\n", 1'700'000'100);
  put(c.dst / "lib/new/n.py", "n\n");
  fs::remove_all(c.dst / "lib/pkg");
  put(c.dst / "lib/pkg/core.py/inner.txt", "a directory now\n");
  fs::remove(c.dst / "link");
  fs::create_symlink("bin/tool", c.dst / "link");
  fs::remove(c.dst / "bin/tool");
  put(c.dst / "bin/tool", "#!/usr/bin/env python\n");
  fs::permissions(c.dst / "bin/tool", fs::perms::owner_exec, fs::perm_options::add);
  c.held = c.write({"__pycache__"});
  // Running python left its cache in the spare (when it was the copy): a clone would not have it.
  put(c.spare / "lib/__pycache__/a.cpython-311.pyc", "cache");
  auto taken = ezpz::sys::take_spare(c.dst.string(), c.held, c.out.string());
  REQUIRE(taken);
  REQUIRE(taken->has_value());
  REQUIRE(ezpz::sys::restore_modes(c.out.string(), **taken, {}));
  linked_copy_of(c.out, c.dst, c.held.manifest);
  CHECK_FALSE(fs::exists(c.out / "lib/__pycache__"));
  CHECK(fs::read_symlink(c.out / "link") == "bin/tool");
}

TEST_CASE("spare: one that is not what its manifest says is never used, and goes", "[spare]") {
  Copy c;
  SECTION("a file added") {
    c.twin();
    put(c.spare / "lib/stray.py", "import os\n");
  }
  SECTION("a file edited (another size)") {
    c.twin();
    fs::remove(c.spare / "lib/a.py");  // its own inode: the copy's stays as it is
    put(c.spare / "lib/a.py", "a = 1; import os\n");
  }
  SECTION("a file missing") {
    c.twin();
    fs::remove(c.spare / "lib/pkg/data.txt");
  }
  SECTION("no manifest") {
    c.twin();
    fs::remove(c.spare / ".ezpz-manifest");
  }
  auto taken = ezpz::sys::take_spare(c.dst.string(), c.held, c.out.string());
  REQUIRE(taken);
  CHECK_FALSE(taken->has_value());
  CHECK_FALSE(fs::exists(c.spare));
  CHECK(ezpz::sys::is_empty_dir(c.out.string()));
  CHECK(ezpz::sys::held_manifest(c.dst.string()).value().digest == c.held.digest);  // the copy untouched
}

TEST_CASE("spare: another user's, or a symlink in its place, is never used nor touched", "[spare]") {
  Copy c;
  const auto elsewhere = c.s.dir / "elsewhere";
  SECTION("another user's directory") {
    c.twin();
    REQUIRE(::lchown(c.spare.c_str(), 65534, 65534) == 0);  // the tests run as root (CI)
  }
  SECTION("a symlink to a twin elsewhere") {
    c.twin();
    fs::rename(c.spare, elsewhere);
    fs::create_directory_symlink(elsewhere, c.spare);
  }
  auto taken = ezpz::sys::take_spare(c.dst.string(), c.held, c.out.string());
  REQUIRE(taken);
  CHECK_FALSE(taken->has_value());
  CHECK(fs::exists(fs::symlink_status(c.spare)));
  CHECK(ezpz::sys::is_empty_dir(c.out.string()));
  if (fs::is_symlink(c.spare)) {
    CHECK(fs::exists(elsewhere / "lib/a.py"));
    return;
  }
  // Nor replaced when the next commit keeps its previous tree: that one is removed instead.
  const auto previous = c.s.dir / "env.ezpz-tmp-2";
  fs::create_directory(previous);
  const auto settled = ezpz::sys::settle_spare(c.dst.string(), previous.string(), ezpz::core::Previous::keep_as_spare,
                                               (c.s.dir / "env.ezpz-tmp-2.spare").string());
  CHECK(settled.remove == previous.string());
  struct stat st {};
  REQUIRE(::lstat(c.spare.c_str(), &st) == 0);
  CHECK(st.st_uid == 65534);
  CHECK(fs::exists(c.spare / "lib/a.py"));
  CHECK_FALSE(fs::exists(c.s.dir / "env.ezpz-tmp-2.spare"));
}

TEST_CASE("spare: the replaced tree kept, a twin made, or none where the copy has no manifest", "[spare]") {
  Copy c;
  const auto previous = c.s.dir / "env.ezpz-tmp-2";
  put(previous / "old.txt", "the tree the copy replaced\n");
  SECTION("kept") {
    c.twin();  // an older spare goes first
    const auto settled = ezpz::sys::settle_spare(c.dst.string(), previous.string(), ezpz::core::Previous::keep_as_spare,
                                                 previous.string() + ".spare");
    CHECK(settled.remove.empty());
    CHECK(fs::exists(c.spare / "old.txt"));
    CHECK_FALSE(fs::exists(previous));
  }
  SECTION("replaced: a twin of the copy") {
    const auto settled = ezpz::sys::settle_spare(c.dst.string(), previous.string(), ezpz::core::Previous::replace,
                                                 previous.string() + ".spare");
    CHECK(settled.remove == previous.string());
    CHECK(inode(c.spare / "lib/pkg/core.py") == inode(c.dst / "lib/pkg/core.py"));
    CHECK(fs::exists(c.spare / ".ezpz-manifest"));
  }
  SECTION("no manifest in the copy: no spare, an older one removed") {
    c.twin();
    fs::remove(c.dst / ".ezpz-manifest");
    const auto settled = ezpz::sys::settle_spare(c.dst.string(), previous.string(), ezpz::core::Previous::replace,
                                                 previous.string() + ".spare");
    CHECK(settled.remove == previous.string());
    CHECK_FALSE(fs::exists(c.spare));
  }
}

TEST_CASE("spare: a relay's copy made from it, its files checked by the copy's inodes, or cloned when it is not right",
          "[spare]") {
  Copy c;
  c.twin();
  SECTION("the twin: taken") {
    auto ready = ezpz::sys::ready_copy(c.dst.string(), c.held.digest, c.out.string());
    REQUIRE(ready);
    CHECK(ready->from_spare);
  }
  SECTION("a file of its own, which stat cannot tell from the copy's (its size, mode, mtime): cloned instead") {
    const auto mode = fs::status(c.dst / "lib/pkg/data.txt").permissions();
    fs::remove(c.spare / "lib/pkg/data.txt");
    put(c.spare / "lib/pkg/data.txt", "ROWS\n");
    fs::permissions(c.spare / "lib/pkg/data.txt", mode);
    auto ready = ezpz::sys::ready_copy(c.dst.string(), c.held.digest, c.out.string());
    REQUIRE(ready);
    CHECK_FALSE(ready->from_spare);
  }
  SECTION("a stray file: cloned instead") {
    put(c.spare / "lib/stray.py", "import os\n");
    auto ready = ezpz::sys::ready_copy(c.dst.string(), c.held.digest, c.out.string());
    REQUIRE(ready);
    CHECK_FALSE(ready->from_spare);
    CHECK_FALSE(fs::exists(c.spare));
  }
  REQUIRE(ezpz::sys::restore_modes(c.out.string(), ezpz::sys::DirModes{{"ro", 0500}}, {}));
  linked_copy_of(c.out, c.dst, c.held.manifest);
}

TEST_CASE("spare: a hand-edited copy is still refused when a spare would have been used", "[spare]") {
  Copy c;
  c.twin();
  put(c.dst / "lib/a.py", "a = 1; import os\n");  // edited in place: the twin's file too (one inode)
  auto ready = ezpz::sys::ready_copy(c.dst.string(), c.held.digest, c.out.string());
  REQUIRE_FALSE(ready);
  CHECK(ready.error().kind == ErrorKind::needs_full_copy);
  CHECK_THAT(ready.error().message, Catch::Contains("lib/a.py changed"));
  CHECK(ezpz::sys::is_empty_dir(c.out.string()));
}

TEST_CASE("spare: a delta applied from it names its step, and keeps the copy it replaces", "[spare]") {
  Copy c;
  c.twin();
  // The next version, and its delta from the copy.
  const auto next = c.s.dir / "next";
  plant(next, "a = 3\n", 1'700'000'300);
  const auto now = ezpz::sys::write_manifest(next.string(), &c.held.manifest, "", {"__pycache__"}).value();
  const auto bundle = c.s.dir / "bundle";
  REQUIRE(ezpz::sys::make_bundle(c.dst.string(), c.held.manifest, c.held.digest, next.string(), now.manifest,
                                 now.digest, bundle.string()));
  auto applied = ezpz::sys::apply_bundle(bundle.string(), c.dst.string(), c.out.string());
  REQUIRE(applied);
  std::vector<std::string> names;
  for (const auto& [step, secs] : applied->steps) {
    names.push_back(step);
  }
  CHECK(names == std::vector<std::string>{"check_s", "spare_s", "apply_s", "verify_s"});
  CHECK(applied->previous == ezpz::core::Previous::keep_as_spare);
  CHECK(ezpz::sys::held_manifest(c.out.string()).value().digest == now.digest);
  CHECK(inode(c.out / "lib/pkg/core.py") == inode(c.dst / "lib/pkg/core.py"));
}
