#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "scratch_dir.hpp"
#include "sys/os/line_relay.hpp"

namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// This file's scratch directories.
struct Scratch : ezpz::test::ScratchDir {
  Scratch() : ScratchDir("line-relay") {}
};

/// Every byte of `text` fed to a stream whose log is `path` (not shown on any terminal).
void log_to(const fs::path& path, const std::string& text) {
  ezpz::sys::LineStream s;
  s.out_fd = -1;
  s.log_path = path;
  ezpz::sys::feed(s, text);
  ezpz::sys::emit_lines(s, ezpz::sys::LineEnd::flush);
}

}  // namespace

TEST_CASE("line relay: a rank's log is made new, or is the user's own file emptied", "[line_relay]") {
  Scratch scratch;
  const auto log = scratch.dir / "rank-0.n1.out";
  log_to(log, "first\n");
  CHECK(read_all(log) == "first\n");
  log_to(log, "second\n");  // this user's own: emptied and reused
  CHECK(read_all(log) == "second\n");
}

TEST_CASE("line relay: a log name that someone could have planted is not written through", "[line_relay]") {
  Scratch scratch;
  // A second name for another file (a hard link: what another user could make to a file of yours),
  // and a symbolic link: neither is followed nor emptied.
  const auto target = scratch.dir / "precious";
  std::ofstream(target) << "keep me\n";
  const auto linked = scratch.dir / "rank-0.n1.out";
  fs::create_hard_link(target, linked);
  log_to(linked, "rank output\n");
  CHECK(read_all(target) == "keep me\n");
  const auto symlinked = scratch.dir / "rank-1.n1.out";
  fs::create_symlink(target, symlinked);
  log_to(symlinked, "rank output\n");
  CHECK(read_all(target) == "keep me\n");
}
