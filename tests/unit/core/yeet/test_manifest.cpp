#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "core/yeet/manifest.hpp"
#include "core/yeet/spare.hpp"

using namespace ezpz::core;

namespace {
ManifestEntry file(const std::string& path, const std::string& digest, unsigned long long size = 10,
                   long long mtime_ns = 5'000'000'000) {
  ManifestEntry e;
  e.path = path;
  e.type = 'f';
  e.mode = 0644;
  e.size = size;
  e.mtime_ns = mtime_ns;
  e.digest = digest;
  return e;
}
Manifest of(std::initializer_list<ManifestEntry> entries) {
  Manifest m;
  for (const auto& e : entries) {
    m.entries[e.path] = e;
  }
  return m;
}
}  // namespace

TEST_CASE("manifest: encodes and decodes, names with spaces, quotes and newlines included", "[manifest]") {
  auto m = of({file("a b/c\"d\ne.py", "ab12"), file("x", "cd34", 0, 1)});
  ManifestEntry dir;
  dir.path = "a b";
  dir.type = 'd';
  dir.mode = 0755;
  m.entries[dir.path] = dir;
  ManifestEntry link;
  link.path = "bin/python";
  link.type = 'l';
  link.mode = 0777;
  link.link = "/usr/bin/python3";
  m.entries[link.path] = link;
  m.ignore = {"__pycache__"};
  auto back = decode_manifest(encode_manifest(m));
  REQUIRE(back);
  CHECK(back->entries == m.entries);
  CHECK(back->ignore == m.ignore);
}

TEST_CASE("manifest: lines written and read directly are nlohmann's, byte for byte and field for field", "[manifest]") {
  auto reference = [](const ManifestEntry& e) {  // what encode_manifest wrote with nlohmann alone
    nlohmann::json j = {{"p", e.path}, {"t", std::string(1, e.type)}, {"m", e.mode}, {"s", e.size}, {"mt", e.mtime_ns}};
    if (!e.digest.empty()) {
      j["d"] = e.digest;
    }
    if (!e.link.empty()) {
      j["l"] = e.link;
    }
    if (e.src_mtime_ns != 0) {
      j["ss"] = e.src_size;
      j["smt"] = e.src_mtime_ns;
    }
    return j.dump();
  };
  auto plain = file("lib/a.py", std::string(64, 'a'), 123456789012ULL, 1'796'530'846'764'457'216LL);
  plain.src_size = 5;
  plain.src_mtime_ns = -1'000'000'000;  // before 1970
  ManifestEntry dir;
  dir.path = "lib";
  dir.type = 'd';
  dir.mode = 0755;
  ManifestEntry link;
  link.path = "bin/python";
  link.type = 'l';
  link.mode = 0777;
  link.link = "/usr/bin/python3.11";
  const auto odd = file("a \"quoted\"\\name\n\xc3\xa9.py", "d1");  // escapes and UTF-8: nlohmann's way
  const auto m = of({plain, dir, link, odd, file("x", "", 0, 0)});
  const auto text = encode_manifest(m);
  std::vector<std::string> lines;
  for (std::size_t at = text.find('\n') + 1; at < text.size(); at = text.find('\n', at) + 1) {
    lines.push_back(text.substr(at, text.find('\n', at) - at));
  }
  std::vector<std::string> want;
  for (const auto& [path, e] : m.entries) {
    want.push_back(reference(e));
  }
  CHECK(lines == want);
  auto back = decode_manifest(text);
  REQUIRE(back);
  REQUIRE(back->entries.size() == m.entries.size());
  for (const auto& [path, e] : m.entries) {
    INFO(path);
    const auto& b = back->entries.at(path);
    CHECK((b.type == e.type && b.mode == e.mode && b.size == e.size && b.mtime_ns == e.mtime_ns &&
           b.digest == e.digest && b.link == e.link && b.src_size == e.src_size && b.src_mtime_ns == e.src_mtime_ns));
  }
  // The same entry in another key order or with an escape is read by the general parser, alike.
  const std::string header = "{\"ezpz_manifest\":1,\"ignore\":[]}\n";
  auto reordered = decode_manifest(header + R"({"t":"f","p":"lib\/a.py","s":7,"m":420,"mt":9})" + "\n");
  REQUIRE(reordered);
  CHECK(reordered->entries.at("lib/a.py").size == 7);
  for (const char* bad : {R"({"m":-1,"mt":9,"p":"a","s":1,"t":"f"})", R"({"m":1.5,"mt":9,"p":"a","s":1,"t":"f"})",
                          R"({"m":420,"mt":9,"p":"../a","s":1,"t":"f"})"}) {
    INFO(bad);
    CHECK_FALSE(decode_manifest(header + bad + "\n"));
  }
}

TEST_CASE("manifest: refuses what is not one, and paths that leave the tree", "[manifest]") {
  CHECK_FALSE(decode_manifest(""));
  CHECK_FALSE(decode_manifest("{\"other\":1}\n"));
  CHECK_FALSE(decode_manifest("{\"ezpz_manifest\":1}\nnot json\n"));
  CHECK_FALSE(decode_manifest("{\"ezpz_manifest\":1}\n{\"p\":\"../etc/passwd\",\"t\":\"f\"}\n"));
  CHECK_FALSE(decode_manifest("{\"ezpz_manifest\":1}\n{\"p\":\"/etc/passwd\",\"t\":\"f\"}\n"));
  CHECK(decode_manifest("{\"ezpz_manifest\":1}\n{\"p\":\"a..b\",\"t\":\"f\"}\n"));
  CHECK(safe_relative_path("a/b..c/d"));
  CHECK_FALSE(safe_relative_path("a//b"));
  CHECK_FALSE(safe_relative_path("a/./b"));
  CHECK_FALSE(safe_relative_path("a/.."));
}

TEST_CASE("manifest and delta header: fields of the wrong type are errors, never exceptions (fuzz finding)",
          "[manifest]") {
  // The fuzzer's first find: an mtime of 1.7e35 was converted to long long (undefined behaviour);
  // a string where a number belongs threw nlohmann::type_error out of decode_manifest.
  const std::string head = "{\"ezpz_manifest\":1}\n";
  for (const std::string line :
       {R"({"p":"bin","t":"d","mt":170000000000000001700000000000000000})", R"({"p":"bin","mt":1.5e300})",
        R"({"p":"a","s":"12"})", R"({"p":7})", R"({"p":"a","m":-1})", R"({"p":"a","m":4294967296})",
        R"({"p":"a","t":1})", R"({"p":"a","ss":-5})", R"({"p":"a","smt":"x"})", R"({"p":"a","d":[1]})"}) {
    INFO(line);
    CHECK_NOTHROW(decode_manifest(head + line + "\n"));
    CHECK_FALSE(decode_manifest(head + line + "\n"));
  }
  for (const char* header : {R"({"ezpz_manifest":"1"})", R"({"ezpz_manifest":1e300})", R"({"ezpz_manifest":null})"}) {
    INFO(header);
    CHECK_NOTHROW(decode_manifest(std::string(header) + "\n"));
    CHECK_FALSE(decode_manifest(std::string(header) + "\n"));
  }
  auto ok = decode_manifest(head + R"({"p":"a","mt":-1700000000000000000,"s":18446744073709551615})" + "\n");
  REQUIRE(ok);
  CHECK(ok->entries.at("a").mtime_ns == -1700000000000000000LL);
  for (const char* text : {R"({"ezpz_delta":"1"})", R"({"ezpz_delta":1e300})", R"({"ezpz_delta":1,"base":5})",
                           R"({"ezpz_delta":1,"new":[]})", R"({"ezpz_delta":1,"removed":[1]})"}) {
    INFO(text);
    CHECK_NOTHROW(ezpz::core::decode_delta_header(text));
    CHECK_FALSE(ezpz::core::decode_delta_header(text));
  }
}

TEST_CASE("manifest diff: added, removed, changed by content or metadata", "[manifest]") {
  const auto old = of({file("same", "1"), file("gone", "2"), file("edited", "3"), file("touched", "4")});
  const auto now = of({file("same", "1"), file("new", "5"), file("edited", "6"), file("touched", "4", 10, 9)});
  const auto d = diff_manifests(old, now);
  CHECK(d.removed == std::vector<std::string>{"gone"});
  CHECK(d.added == std::vector<std::string>{"new"});
  CHECK(d.changed == std::vector<std::string>{"edited", "touched"});
  CHECK(diff_manifests(now, now).changed.empty());
}

TEST_CASE("tree divergence: a hand edit, a missing or extra file, mtimes to the second", "[manifest]") {
  const auto m = of({file("a", "1", 10, 5'123'456'789)});
  std::map<std::string, StatEntry> tree = {{"a", StatEntry{'f', 0644, 10, 5'000'000'000, ""}}};
  CHECK(tree_divergence(m, tree).empty());  // the stream carries whole seconds
  tree["a"].size = 11;
  CHECK(tree_divergence(m, tree) == "a changed");
  tree["a"].size = 10;
  tree["a"].mtime_ns = 6'000'000'000;
  CHECK(tree_divergence(m, tree) == "a changed");
  tree["a"].mtime_ns = 5'000'000'000;
  tree["b"] = StatEntry{'f', 0644, 1, 1, ""};
  CHECK(tree_divergence(m, tree) == "b is new");
  CHECK(tree_divergence(m, {}) == "a is missing");
}

TEST_CASE("delta divergence: what a delta touched is checked on disk, the rest against the old manifest",
          "[manifest]") {
  const auto old = of({file("a", "1"), file("b", "2"), file("gone", "3")});
  const auto now = of({file("a", "1"), file("b", "9", 10, 6'000'000'000), file("new", "4")});
  auto stat_of = [](const ManifestEntry& e) { return StatEntry{e.type, e.mode, e.size, e.mtime_ns, e.link}; };
  // The new manifest whole, or read from the lines that differ (a node's way): the same answer.
  const auto changes = manifest_changes(encode_manifest(old), encode_manifest(now)).value();
  REQUIRE_FALSE(changes.whole);
  auto divergence = [&](const std::vector<std::string>& paths, const std::map<std::string, StatEntry>& stats) {
    const auto whole = delta_divergence(old, now, paths, stats);
    CHECK(delta_divergence(old, changes, paths, stats) == whole);
    return whole;
  };
  const std::vector<std::string> touched = {"gone", "b", "new"};
  std::map<std::string, StatEntry> disk = {{"b", stat_of(now.entries.at("b"))},
                                           {"new", stat_of(now.entries.at("new"))}};
  CHECK(divergence(touched, disk).empty());
  // A touched path not as the manifest says, missing, or left behind.
  auto late = disk;
  late["b"].mtime_ns = 9'000'000'000;
  CHECK(divergence(touched, late) == "b changed");
  auto lost = disk;
  lost.erase("new");
  CHECK(divergence(touched, lost) == "new is missing");
  auto kept = disk;
  kept["gone"] = stat_of(old.entries.at("gone"));
  CHECK(divergence(touched, kept) == "gone is new");
  // What the delta did not touch must be in the new manifest as the old one had it.
  CHECK(divergence({"gone", "new"}, disk) == "b changed");
  CHECK(divergence({"b", "new"}, disk) == "gone is new");
  CHECK(divergence({"gone", "b"}, disk) == "new is missing");
  // The same whole seconds are the same mtime (the stream carries whole seconds).
  auto coarse = disk;
  coarse["b"].mtime_ns = 6'000'000'000 + 999;
  CHECK(divergence(touched, coarse).empty());
}

TEST_CASE("delta header round-trips and refuses unsafe paths", "[manifest]") {
  DeltaHeader h{"base", "new", {"x/y", "z"}, {{"lib/big.so", "0"}}};
  auto back = decode_delta_header(encode_delta_header(h));
  REQUIRE(back);
  CHECK(back->base_digest == "base");
  CHECK(back->new_digest == "new");
  CHECK(back->removed == h.removed);
  CHECK(back->deltas == h.deltas);
  CHECK_FALSE(decode_delta_header(R"({"ezpz_delta":1,"removed":["../x"]})"));
  CHECK_FALSE(decode_delta_header(R"({"ezpz_delta":1,"deltas":{"a":"../../x"}})"));
  CHECK_FALSE(decode_delta_header(R"({"ezpz_delta":2})"));
}

TEST_CASE("manifest patch: the new manifest from the old one and the lines that differ is the one decoded whole",
          "[manifest]") {
  Manifest old;
  old.ignore = {"__pycache__"};
  for (int i = 0; i < 200; ++i) {
    const auto name = "pkg" + std::to_string(i % 7) + "/m" + std::to_string(i) + (i % 13 == 0 ? " \"q\"\n\u00e9" : "");
    old.entries[name] = file(name, std::string(64, static_cast<char>('a' + i % 6)), i, 1'000'000'000LL * i);
  }
  const auto old_text = encode_manifest(old);
  SECTION("entries added (first, last, between), changed and removed") {
    auto now = old;
    now.entries["000 first"] = file("000 first", "ff");
    now.entries["zzz last"] = file("zzz last", "ee");
    now.entries["pkg3/between \"x\""] = file("pkg3/between \"x\"", "dd");
    int n = 0;
    for (auto it = now.entries.begin(); it != now.entries.end();) {
      ++n;
      if (n % 11 == 0) {
        it = now.entries.erase(it);
        continue;
      }
      if (n % 17 == 0) {
        it->second.digest = "changed";
        it->second.mode = 0600;
      }
      ++it;
    }
    now.entries.erase(now.entries.begin()->first == "000 first" ? std::next(now.entries.begin()) : now.entries.begin());
    const auto new_text = encode_manifest(now);
    auto patched = patch_manifest(decode_manifest(old_text).value(), old_text, new_text);
    REQUIRE(patched);
    CHECK(patched->entries == decode_manifest(new_text)->entries);
    CHECK(patched->ignore == old.ignore);
  }
  SECTION("nothing, everything, another ignore list") {
    const auto m = decode_manifest(old_text).value();
    CHECK(patch_manifest(m, old_text, old_text)->entries == m.entries);
    CHECK(patch_manifest(m, old_text, encode_manifest(Manifest{{}, old.ignore}))->entries.empty());
    auto other = old;
    other.ignore = {"__pycache__", "node_modules"};
    auto patched = patch_manifest(m, old_text, encode_manifest(other));
    REQUIRE(patched);
    CHECK(patched->ignore == other.ignore);
    CHECK(patched->entries == old.entries);
  }
  SECTION("a bad line is an error, as decode_manifest says") {
    CHECK_FALSE(patch_manifest(decode_manifest(old_text).value(), old_text, old_text + "{\"p\":\"../x\"}\n"));
  }
}

TEST_CASE("manifest written from the last one: what encode_manifest writes, the unchanged lines reused", "[manifest]") {
  Manifest old;
  for (int i = 0; i < 50; ++i) {
    const auto name = "d/f" + std::to_string(i) + (i % 9 == 0 ? " \"q\"" : "");
    old.entries[name] = file(name, "aa", i);
  }
  const auto old_text = encode_manifest(old);
  auto now = old;
  now.entries.erase("d/f3");
  now.entries["d/f4"].digest = "bb";
  now.entries["d/f4"].src_size = 7;
  now.entries["a first"] = file("a first", "cc");
  now.entries["d/f9 \"q\""].mode = 0600;
  CHECK(encode_manifest_reusing(now, old, old_text) == encode_manifest(now));
  CHECK(encode_manifest_reusing(old, old, old_text) == old_text);
  // An old text that is not one line per entry (a line twice): written whole.
  CHECK(encode_manifest_reusing(now, old, old_text + old_text.substr(old_text.find('\n') + 1)) == encode_manifest(now));
  auto other = now;
  other.ignore = {"__pycache__"};
  CHECK(encode_manifest_reusing(other, old, old_text) == encode_manifest(other));
}

TEST_CASE("spare: the replaced copy is kept when what only it holds is at most an eighth of it", "[manifest]") {
  ManifestEntry dir;
  dir.type = 'd';
  dir.mode = 0755;
  auto m = of({file("data/w1.bin", "1", 700), file("data/w2.bin", "2", 200), file("data-x/y.bin", "3", 60),
               file("lib/a.py", "4", 40)});
  for (const auto* path : {"data", "data-x", "lib"}) {
    dir.path = path;
    m.entries[dir.path] = dir;
  }
  // A directory's new mtime shares its contents; an edited file or a removed tree does not.
  CHECK(previous_after(m, {}, {"data", "lib/a.py"}) == Previous::keep_as_spare);  // 40 of 1000
  CHECK(previous_after(m, {}, {"data/w2.bin"}) == Previous::replace);             // 200
  CHECK(previous_after(m, {"data-x"}, {"lib/a.py"}) == Previous::keep_as_spare);  // 100, not data/'s 900
  CHECK(previous_after(m, {"data", "data/w1.bin"}, {}) == Previous::replace);     // 900, counted once
  CHECK(previous_after(m, {"lib", "lib/a.py"}, {"lib/a.py", "new.py"}) == Previous::keep_as_spare);  // 40 once
  CHECK(previous_after(m, {"data-x/y.bin"}, {"lib/a.py"}) == Previous::keep_as_spare);               // 100: 1/8 at most
  CHECK(previous_after(m, {"data-x/y.bin"}, {"lib/a.py", "data/w2.bin"}) == Previous::replace);
}
