#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scratch_dir.hpp"
#include "sys/fs/incremental.hpp"

namespace fs = std::filesystem;
using ezpz::ErrorKind;

namespace {

/// This file's scratch directories.
struct Scratch : ezpz::test::ScratchDir {
  Scratch() : ScratchDir("incremental") {}
};

std::string bytes(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (auto& c : s) {
    c = static_cast<char>(gen());
  }
  return s;
}

/// `text` written at `path` with the mtime `second` (whole seconds, as the stream carries).
void put(const fs::path& path, const std::string& text, long second = 1'700'000'000) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  const timespec times[2] = {{second, 0}, {second, 0}};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

/// The names of the steps an apply reported, in order.
std::vector<std::string> step_names(const ezpz::core::BundleApplied& applied) {
  std::vector<std::string> names;
  for (const auto& [step, secs] : applied.steps) {
    names.push_back(step);
  }
  return names;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The copy a node holds (old) and the source's next version (now), with its manifest and bundle.
struct Versions {
  Scratch s;
  fs::path old_root = s.dir / "old";
  fs::path new_root = s.dir / "new";
  fs::path bundle = s.dir / "bundle";
  ezpz::core::HeldManifest old_m;
  ezpz::core::HeldManifest new_m;
  ezpz::core::BundleStats stats;
  const std::string weights = bytes(1 << 20, 1);
  const std::string table = bytes(300'000, 2);
  const std::string text = bytes(500'000, 3);

  Versions() {
    put(old_root / "w.bin", weights);
    put(old_root / "t.bin", table);
    put(old_root / "lib/m.py", text);
    put(old_root / "lib/gone.py", "x");
    put(old_root / "same.txt", "same");
    old_m = ezpz::sys::write_manifest(old_root.string(), nullptr, "", {}).value();
    auto edited = weights;  // one page rewritten in place
    edited.replace(40960, 4096, bytes(4096, 4));
    put(new_root / "w.bin", edited, 1'700'000'100);
    put(new_root / "t.bin", table + "appended", 1'700'000'100);                                        // appended to
    put(new_root / "lib/m.py", text.substr(0, 1000) + "inserted" + text.substr(1000), 1'700'000'100);  // shifted
    put(new_root / "lib/new.py", "print(1)\n");  // lib/gone.py removed
    put(new_root / "same.txt", "same");
    fs::permissions(new_root, fs::status(old_root).permissions());
    new_m = ezpz::sys::write_manifest(new_root.string(), &old_m.manifest, "", {}).value();
    stats = ezpz::sys::make_bundle(old_root.string(), old_m.manifest, old_m.digest, new_root.string(), new_m.manifest,
                                   new_m.digest, bundle.string())
                .value();
  }
  /// apply_bundle into a fresh directory beside them.
  ezpz::Expected<ezpz::core::BundleApplied> apply(const std::string& name = "staging") {
    const auto staging = s.dir / name;
    fs::create_directory(staging);
    return ezpz::sys::apply_bundle(bundle.string(), old_root.string(), staging.string());
  }
};

}  // namespace

TEST_CASE("incremental: edits in place, appends and shifted content travel as deltas that apply to the node's copy",
          "[incremental]") {
  Versions v;
  CHECK(v.stats.deltas == 3);
  CHECK(v.stats.delta_bytes < 20'000);  // a page, a few bytes, an insertion: not the 1.8 MB of the files
  CHECK(v.stats.files == 1);            // lib/new.py whole
  CHECK(v.stats.removed == 1);
  auto applied = v.apply();
  REQUIRE(applied);
  CHECK_FALSE(applied->unchanged);
  for (const auto* name : {"w.bin", "t.bin", "lib/m.py", "lib/new.py", "same.txt"}) {
    INFO(name);
    CHECK(read(v.s.dir / "staging" / name) == read(v.new_root / name));
  }
  CHECK_FALSE(fs::exists(v.s.dir / "staging/lib/gone.py"));
  CHECK(step_names(*applied) == std::vector<std::string>{"check_s", "clone_s", "apply_s", "verify_s"});
}

TEST_CASE("incremental: a patch is written apart from the tree, whatever names the tree holds", "[incremental]") {
  Scratch s;
  const auto weights = bytes(1 << 20, 5);
  put(s.dir / "old/w.bin", weights);
  put(s.dir / "old/w.bin.ezpz-patch", "an entry of the tree\n");  // the name a patch once used
  put(s.dir / "old/w.bin.patched", "another\n");
  const auto old_m = ezpz::sys::write_manifest((s.dir / "old").string(), nullptr, "", {}).value();
  auto edited = weights;
  edited.replace(4096, 4096, bytes(4096, 6));
  put(s.dir / "new/w.bin", edited, 1'700'000'100);
  put(s.dir / "new/w.bin.ezpz-patch", "an entry of the tree\n");
  put(s.dir / "new/w.bin.patched", "another\n");
  fs::permissions(s.dir / "new", fs::status(s.dir / "old").permissions());
  const auto new_m = ezpz::sys::write_manifest((s.dir / "new").string(), &old_m.manifest, "", {}).value();
  const auto stats =
      ezpz::sys::make_bundle((s.dir / "old").string(), old_m.manifest, old_m.digest, (s.dir / "new").string(),
                             new_m.manifest, new_m.digest, (s.dir / "bundle").string());
  REQUIRE(stats);
  REQUIRE(stats->deltas == 1);
  fs::create_directory(s.dir / "staging");
  REQUIRE(ezpz::sys::apply_bundle((s.dir / "bundle").string(), (s.dir / "old").string(), (s.dir / "staging").string()));
  CHECK(read(s.dir / "staging/w.bin") == edited);
  CHECK(read(s.dir / "staging/w.bin.ezpz-patch") == "an entry of the tree\n");
  // The copy (whose files the staging tree shares) is as it was.
  CHECK(read(s.dir / "old/w.bin.ezpz-patch") == "an entry of the tree\n");
  CHECK(read(s.dir / "old/w.bin") == weights);
  CHECK(ezpz::sys::held_manifest((s.dir / "old").string()).value().digest == old_m.digest);
}

TEST_CASE("incremental: a bundle that changes nothing leaves the checked copy as it is", "[incremental]") {
  Scratch s;
  put(s.dir / "old/a.py", "a");
  auto held = ezpz::sys::write_manifest((s.dir / "old").string(), nullptr, "", {}).value();
  const auto bundle = (s.dir / "bundle").string();
  REQUIRE(ezpz::sys::make_bundle((s.dir / "old").string(), held.manifest, held.digest, (s.dir / "old").string(),
                                 held.manifest, held.digest, bundle));
  fs::create_directory(s.dir / "staging");
  auto applied = ezpz::sys::apply_bundle(bundle, (s.dir / "old").string(), (s.dir / "staging").string());
  REQUIRE(applied);
  CHECK(applied->unchanged);
  CHECK(fs::is_empty(s.dir / "staging"));
  // A node whose copy was edited by hand is not taken for unchanged: it gets the whole tree.
  put(s.dir / "old/a.py", "edited", 1'700'000'500);
  auto by_hand = ezpz::sys::apply_bundle(bundle, (s.dir / "old").string(), (s.dir / "staging").string());
  REQUIRE_FALSE(by_hand);
  CHECK(by_hand.error().kind == ErrorKind::needs_full_copy);
}

TEST_CASE("incremental: a hand-edited copy or a damaged delta is refused, never installed", "[incremental]") {
  SECTION("the node's copy was edited since its manifest") {
    Versions v;
    put(v.old_root / "same.txt", "SAME", 1'700'000'900);
    auto applied = v.apply();
    REQUIRE_FALSE(applied);
    CHECK(applied.error().kind == ErrorKind::needs_full_copy);
  }
  SECTION("a delta damaged on the way: the patched file is not what the manifest says") {
    Versions v;
    for (const auto& e : fs::directory_iterator(v.bundle / ezpz::core::kDeltaDirName)) {
      if (e.path().filename() == "header.json") {
        continue;
      }
      auto delta = read(e.path());
      delta[delta.size() / 2] = static_cast<char>(delta[delta.size() / 2] ^ 0x55);
      std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << delta;
    }
    auto applied = v.apply();
    REQUIRE_FALSE(applied);
    CHECK(applied.error().kind == ErrorKind::needs_full_copy);
  }
}

TEST_CASE("incremental: the source unchanged since its copy is told apart from a chmod, a new target, a new entry",
          "[incremental]") {
  Scratch s;
  const auto src = s.dir / "src";
  put(src / "bin/tool", "#!/old/prefix/bin/python\n");
  put(src / "lib/a.py", "a");
  fs::create_symlink("lib/a.py", src / "link");
  // The copy (a moved env patched for its new place: its file differs from the source's).
  const auto copy = s.dir / "copy";
  put(copy / "bin/tool", "#!/new/place/bin/python\n", 1'700'000'300);
  put(copy / "lib/a.py", "a");
  fs::create_symlink("lib/a.py", copy / "link");
  for (const auto* dir : {"", "bin", "lib"}) {
    fs::permissions(copy / dir, fs::status(src / dir).permissions());
  }
  const auto m = ezpz::sys::write_manifest(copy.string(), nullptr, src.string(), {}).value().manifest;
  auto changes = [&] { return ezpz::sys::estimate_changes(src.string(), {}, m).value(); };
  CHECK(changes().files == 0);
  CHECK(changes().removed == 0);
  fs::permissions(src / "lib/a.py", fs::perms::owner_exec, fs::perm_options::add);
  CHECK(changes().files == 1);
  fs::permissions(src / "lib/a.py", fs::perms::owner_exec, fs::perm_options::remove);
  fs::remove(src / "link");
  fs::create_symlink("bin/tool", src / "link");
  CHECK(changes().files == 1);
  fs::remove(src / "link");
  CHECK(changes().removed == 1);
  fs::create_directory(src / "new");
  CHECK(changes().files == 1);
}

TEST_CASE("incremental: a copy cloned when the delta was announced gives the same tree, and only the copy announced",
          "[incremental]") {
  Versions v;
  const auto out = (v.s.dir / "early").string();
  // Another manifest announced (this node missed a yeet): nothing made, the bundle applies as usual.
  auto other = ezpz::sys::clone_held(v.old_root.string(), std::string(64, 'a'), out);
  REQUIRE_FALSE(other);
  CHECK_FALSE(fs::exists(out));
  // This copy's: cloned at once; the bundle then applies to that clone.
  auto cloned = ezpz::sys::clone_held(v.old_root.string(), v.old_m.digest, out);
  REQUIRE(cloned);
  CHECK(fs::status(out).permissions() == fs::perms::owner_all);
  CHECK(fs::hard_link_count(v.s.dir / "early/same.txt") == 2);  // the copy's own file, not a copy of it
  auto applied = ezpz::sys::apply_bundle(v.bundle.string(), v.old_root.string(), out, &*cloned);
  REQUIRE(applied);
  for (const auto* name : {"w.bin", "t.bin", "lib/m.py", "lib/new.py", "same.txt"}) {
    INFO(name);
    CHECK(read(v.s.dir / "early" / name) == read(v.new_root / name));
  }
  CHECK_FALSE(fs::exists(v.s.dir / "early/lib/gone.py"));
  CHECK(step_names(*applied) == std::vector<std::string>{"early_s", "clone_s", "apply_s", "verify_s"});
  CHECK(ezpz::sys::held_manifest(v.old_root.string()).value().digest == v.old_m.digest);  // untouched
}

TEST_CASE("incremental: a clone keeps read-only directories read-only and symlinks' times", "[incremental]") {
  Scratch s;
  put(s.dir / "old/ro/a.txt", "a");
  fs::create_symlink("ro/a.txt", s.dir / "old/link");
  const timespec times[2] = {{1'600'000'000, 0}, {1'600'000'000, 0}};
  REQUIRE(::utimensat(AT_FDCWD, (s.dir / "old/link").c_str(), times, AT_SYMLINK_NOFOLLOW) == 0);
  fs::permissions(s.dir / "old/ro", fs::perms::owner_read | fs::perms::owner_exec);
  const auto held = ezpz::sys::write_manifest((s.dir / "old").string(), nullptr, "", {}).value();
  fs::create_directory(s.dir / "clone");
  auto narrowed = ezpz::sys::clone_as_links((s.dir / "old").string(), held.manifest, (s.dir / "clone").string());
  REQUIRE(narrowed);
  // Writable until the caller is done with it, then as the copy has it.
  REQUIRE(narrowed->size() == 1);
  CHECK(narrowed->front().first == "ro");
  CHECK((fs::status(s.dir / "clone/ro").permissions() & fs::perms::owner_write) != fs::perms::none);
  REQUIRE(ezpz::sys::restore_modes((s.dir / "clone").string(), *narrowed, {}));
  CHECK(fs::status(s.dir / "clone/ro").permissions() == (fs::perms::owner_read | fs::perms::owner_exec));
  struct stat st {};
  REQUIRE(::lstat((s.dir / "clone/link").c_str(), &st) == 0);
  CHECK(st.st_mtim.tv_sec == 1'600'000'000);
  fs::permissions(s.dir / "old/ro", fs::perms::owner_all);
  fs::permissions(s.dir / "clone/ro", fs::perms::owner_all);
}
