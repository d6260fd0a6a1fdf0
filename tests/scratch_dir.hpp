// A private directory for one test (mkdtemp below /tmp: a name no one could have made first),
// removed with everything in it when the test ends.
#pragma once

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace ezpz::test {

class ScratchDir {
 public:
  /// /tmp/ezpz-NAME-XXXXXX
  explicit ScratchDir(const std::string& name) {
    std::string tmpl = "/tmp/ezpz-" + name + "-XXXXXX";
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    dir = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  /// `text` written to the file `name` in it; its path.
  [[nodiscard]] std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name, std::ios::binary) << text;
    return (dir / name).string();
  }

  std::filesystem::path dir;
};

}  // namespace ezpz::test
