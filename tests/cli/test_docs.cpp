#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "cli/app.hpp"
#include "cli/completions.hpp"

namespace {
std::string read(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
/// roff writes '-' as '\-'; compare on the plain text.
std::string unroff(std::string s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == '-') {
      continue;
    }
    out += s[i];
  }
  return out;
}
}  // namespace

TEST_CASE("every option is documented in the man pages", "[docs]") {
  ezpz::cli::Cli cli;
  auto model = ezpz::cli::completion_model(cli.app());
  const auto main_page = unroff(read(std::string(EZPZ_SOURCE_DIR) + "/docs/ezpz.1"));
  for (const auto& o : model.global) {
    for (const auto& n : o.names) {
      CHECK_THAT(main_page, Catch::Contains(n));
    }
  }
  for (const auto& c : model.commands) {
    INFO(c.name);
    CHECK_THAT(main_page, Catch::Contains(c.name));
    // Each command with options has its own page, docs/ezpz-<command>.1.
    std::string page = main_page;
    if (c.name == "launch" || c.name == "yeet" || c.name == "tar-env" || c.name == "test" || c.name == "plot" ||
        c.name == "doctor" || c.name == "env" || c.name == "submit" || c.name == "kill") {
      page = unroff(read(std::string(EZPZ_SOURCE_DIR) + "/docs/ezpz-" + c.name + ".1"));
    }
    for (const auto& o : c.options) {
      for (const auto& n : o.names) {
        INFO(n);
        CHECK_THAT(page, Catch::Contains(n));
      }
    }
  }
  CHECK_THAT(main_page, Catch::Contains("EXAMPLES"));
}
