#include <catch2/catch.hpp>

#include "core/yeet/extract_guard.hpp"

using ezpz::core::EntryKind;
using ezpz::core::ExtractGuard;
using ezpz::core::Refusal;

TEST_CASE("ExtractGuard: names", "[extract_guard]") {
  ExtractGuard g;
  CHECK(g.admit("", EntryKind::file).refusal == Refusal::empty_name);
  CHECK(g.admit("/etc/passwd", EntryKind::file).refusal == Refusal::absolute);
  CHECK(g.admit("a/../../x", EntryKind::file).refusal == Refusal::dot_dot);
  CHECK(g.admit("a/..", EntryKind::dir).refusal == Refusal::dot_dot);
  CHECK(g.admit("./a//b/", EntryKind::dir).name == "a/b");
  CHECK(g.admit("./", EntryKind::dir).name.empty());  // the root itself
  std::string deep;
  for (int i = 0; i < 300; ++i) {
    deep += "d/";
  }
  CHECK(g.admit(deep + "f", EntryKind::file).refusal == Refusal::too_deep);
  CHECK(g.admit("a/" + std::string(5000, 'x'), EntryKind::file).refusal == Refusal::too_long);
}

TEST_CASE("ExtractGuard: only what a Python env needs", "[extract_guard]") {
  ExtractGuard g;
  for (auto kind :
       {EntryKind::fifo, EntryKind::socket, EntryKind::char_device, EntryKind::block_device, EntryKind::other}) {
    CHECK(g.admit("env/x", kind).refusal == Refusal::special_file);
  }
  CHECK(g.admit("env/f", EntryKind::file).ok());
  CHECK(g.admit("env/h", EntryKind::hardlink, "env/f").ok());
  CHECK(g.admit("env/h2", EntryKind::hardlink, "env/missing").refusal == Refusal::hardlink_target);
  CHECK(g.admit("env/h3", EntryKind::hardlink, "../etc/passwd").refusal == Refusal::hardlink_target);
  CHECK(g.admit("env/h4", EntryKind::hardlink, "/etc/passwd").refusal == Refusal::hardlink_target);
}

TEST_CASE("ExtractGuard: modes never widen access", "[extract_guard]") {
  CHECK(ezpz::core::safe_mode(04777, 022) == 0755);
  CHECK(ezpz::core::safe_mode(02775, 0) == 0755);
  CHECK(ezpz::core::safe_mode(0666, 077) == 0600);
  CHECK(ezpz::core::safe_mode(01777, 002) == 0755);
  CHECK(ezpz::core::safe_mode(0644, 022) == 0644);
}

TEST_CASE("ExtractGuard: a member stored twice", "[extract_guard]") {
  ExtractGuard g;
  CHECK_FALSE(g.admit("env/f", EntryKind::file).replaces);
  CHECK(g.admit("env/f", EntryKind::file).replaces);
  CHECK(g.admit("env/f", EntryKind::symlink, "x").replaces);
  CHECK(g.admit("env/d", EntryKind::dir).ok());
  CHECK_FALSE(g.admit("env/d", EntryKind::dir).replaces);  // merged, as tar does
  CHECK(g.admit("env/d", EntryKind::file).refusal == Refusal::kind_change);
  CHECK(g.admit("env/d2/inner", EntryKind::file).ok());
  CHECK(g.admit("env/d2", EntryKind::file).refusal == Refusal::kind_change);  // implied by its child
}

TEST_CASE("ExtractGuard: relative symlinks resolved through the tree's links", "[extract_guard]") {
  SECTION("cur -> . then par -> cur/../..") {
    ExtractGuard g;
    CHECK(g.admit("a/cur", EntryKind::symlink, ".").ok());
    CHECK(g.admit("a/par", EntryKind::symlink, "cur/../..").refusal == Refusal::symlink_escape);
  }
  SECTION("a link made before the one it passes through") {
    ExtractGuard g;
    CHECK(g.admit("env/x", EntryKind::symlink, "f/..").ok());
    CHECK(g.admit("env/f", EntryKind::symlink, ".").ok());
    CHECK(g.check_links().refusal == Refusal::symlink_escape);
  }
  SECTION("a link replaced later") {
    ExtractGuard g;
    CHECK(g.admit("env/d/keep", EntryKind::file).ok());
    CHECK(g.admit("env/l", EntryKind::symlink, "d").ok());
    CHECK(g.admit("env/x", EntryKind::symlink, "l/..").ok());
    CHECK(g.check_links().ok());
    CHECK(g.admit("env/l", EntryKind::symlink, ".").ok());
    CHECK(g.check_links().refusal == Refusal::symlink_escape);
  }
  SECTION("a hard link to a symlink is read from its own directory") {
    ExtractGuard g;
    CHECK(g.admit("env/a/b/s", EntryKind::symlink, "../x").ok());
    CHECK(g.check_links().ok());
    CHECK(g.admit("env/s", EntryKind::hardlink, "env/a/b/s").ok());
    CHECK(g.check_links().refusal == Refusal::symlink_escape);
  }
  SECTION("loops") {
    ExtractGuard g;
    CHECK(g.admit("env/p", EntryKind::symlink, "q/x").ok());
    CHECK(g.admit("env/q", EntryKind::symlink, "p/y").ok());
    CHECK(g.check_links().refusal == Refusal::symlink_loop);
  }
  SECTION("the lifted top: its parent is outside") {
    ExtractGuard g;
    CHECK(g.admit("env/bin/a", EntryKind::symlink, "../../x").ok());  // inside the extraction directory
    CHECK(g.lifted_top() == "env");
    CHECK(g.check_links().refusal == Refusal::symlink_escape);  // but env/ becomes the root
  }
  SECTION("a venv's links pass") {
    ExtractGuard g;
    CHECK(g.admit("env/lib/python3.11/x.py", EntryKind::file).ok());
    CHECK(g.admit("env/lib64", EntryKind::symlink, "lib").ok());
    CHECK(g.admit("env/bin/py", EntryKind::symlink, "../lib64/python3.11/x.py").ok());
    CHECK(g.admit("env/bin/python3", EntryKind::symlink, "/usr/bin/python3.11").ok());
    CHECK(g.admit("env/bin/python", EntryKind::symlink, "python3").ok());
    CHECK(g.admit("env/bin/up", EntryKind::symlink, "python3/../..").ok());  // through an absolute link: not judged
    CHECK(g.check_links().ok());
  }
  SECTION("no single top: nothing is lifted") {
    ExtractGuard g;
    CHECK(g.admit("a/x", EntryKind::file).ok());
    CHECK(g.admit("b", EntryKind::symlink, "a/../a/x").ok());
    CHECK(g.lifted_top().empty());
    CHECK(g.check_links().ok());
  }
}

TEST_CASE("ExtractGuard: nothing below a file, no link as the root (review findings)", "[extract_guard]") {
  ExtractGuard g;
  CHECK(g.admit("top", EntryKind::file).ok());
  // libarchive would turn the file into a directory on the way, and the lift then follows it.
  CHECK(g.admit("top/d/", EntryKind::dir).refusal == Refusal::kind_change);
  CHECK(g.admit("top/l", EntryKind::symlink, "../outside").refusal == Refusal::kind_change);
  CHECK(g.admit(".", EntryKind::symlink, "x").refusal == Refusal::empty_name);
  CHECK(g.admit("./", EntryKind::file).refusal == Refusal::empty_name);
  CHECK_FALSE(ezpz::core::ExtractGuard().admit("./", EntryKind::symlink, "..").ok());
}

TEST_CASE("ExtractGuard: yeet's own archives judge links by their text", "[extract_guard]") {
  ezpz::core::ExtractLimits own;
  own.resolve_links = false;
  ExtractGuard g(own);
  CHECK(g.admit("env/a/cur", EntryKind::symlink, ".").ok());
  CHECK(g.admit("env/a/par", EntryKind::symlink, "cur/../..").ok());  // the tree on this node holds it too
  CHECK(g.admit("env/x", EntryKind::symlink, "../data").ok());        // inside the extraction directory
  CHECK(g.check_links().ok());
  CHECK(g.admit("env/y", EntryKind::symlink, "../../data").refusal == Refusal::symlink_escape);
}
