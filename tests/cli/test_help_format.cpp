// Help that fits: wrapped at the width, no parser types, aliases once, true Usage lines.
#include <catch2/catch.hpp>

#include <sstream>

#include "cli/app.hpp"
#include "cli/help_format.hpp"

using ezpz::cli::Cli;
using ezpz::cli::Terminal;
using Strings = std::vector<std::string>;

namespace {

std::string help_of(const Strings& args, std::size_t width = 80) {
  Cli cli(width);
  std::ostringstream out, err;
  Terminal term(out, err, ezpz::cli::Colors::none());
  (void)cli.parse(args, term);
  return out.str();
}

/// `text` with every run of spaces and newlines made one space (wrapping undone).
std::string flat(const std::string& text) {
  std::string out;
  for (char c : text) {
    if ((c == ' ' || c == '\n') && !out.empty() && out.back() == ' ') {
      continue;
    }
    out += c == '\n' ? ' ' : c;
  }
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

const Strings kCommands{"launch", "yeet",   "tar-env", "test",        "plot", "doctor",
                        "env",    "submit", "kill",    "completions", "help"};

}  // namespace

TEST_CASE("help: every command's help fits the width and shows no parser types", "[cli][help]") {
  for (const std::size_t width : {80, 60, 100}) {
    for (const auto& c : kCommands) {
      const auto text = help_of({c, "--help"}, width);
      INFO(c << " at " << width << ":\n" << text);
      REQUIRE_THAT(text, Catch::Contains("Usage: ezpz " + c));
      for (const auto& line : lines_of(text)) {
        CHECK(line.size() <= width);
      }
      for (const char* parser : {"TEXT", ":INT", "INT in", "FLOAT", "NONNEGATIVE", "POSITIVE", ":{", "SIZE [",
                                 "Positionals:", "-h,--help"}) {
        CHECK(text.find(parser) == std::string::npos);
      }
    }
    const auto root = help_of({"--help"}, width);
    for (const auto& line : lines_of(root)) {
      CHECK(line.size() <= width);
    }
  }
  // Wider terminals use their width.
  const auto wide = lines_of(help_of({"yeet", "--help"}, 100));
  CHECK(std::any_of(wide.begin(), wide.end(), [](const std::string& l) { return l.size() > 80; }));
}

TEST_CASE("help: aliases once, after the description, true Usage lines, yeet's expert options apart", "[cli][help]") {
  const auto launch = flat(help_of({"launch", "--help"}));
  CHECK_THAT(launch, Catch::Contains(" -n, --nproc N ") && Catch::Contains("(also --np, --nprocs, --world-size)"));
  CHECK(launch.find("--world_size") == std::string::npos);  // torchrun's spelling beside --world-size
  CHECK_THAT(launch, Catch::Contains("Usage: ezpz launch [OPTIONS] -- COMMAND... "));
  CHECK_THAT(help_of({"submit", "--help"}), Catch::Contains("Usage: ezpz submit [OPTIONS] -- COMMAND...\n"));
  const auto kill = help_of({"kill", "--help"});
  CHECK_THAT(kill, Catch::Contains("Usage: ezpz kill [OPTIONS] [PATTERN]\n"));
  CHECK(kill.find("PATTERN") == kill.rfind("PATTERN", kill.find("Arguments:")));  // once in Usage, once below
  CHECK_THAT(help_of({"completions", "--help"}), Catch::Contains("Usage: ezpz completions [OPTIONS] SHELL\n"));
  CHECK_THAT(help_of({"--help"}), Catch::Contains("Usage: ezpz [OPTIONS] COMMAND\n") && Catch::Contains("Commands:"));
  const auto yeet = help_of({"yeet", "--help"});
  CHECK_THAT(yeet, Catch::Contains("Usage: ezpz yeet [OPTIONS] [SOURCE]\n"));
  CHECK_THAT(yeet, Catch::Contains("  --strategy tree|greedy") && Catch::Contains("  --fanout N "));
  const auto expert = yeet.find("\nExpert options:\n");
  REQUIRE(expert != std::string::npos);
  CHECK(yeet.find("\nOptions:\n") < expert);
  CHECK(yeet.find("--stall-timeout") > expert);
  CHECK(yeet.find("--dst") < expert);
  // Flags take no value; an option whose value is optional says so.
  CHECK(yeet.find("--dry-run [") == std::string::npos);
}

TEST_CASE("wrap: words kept whole, lines filled, indentation after the first", "[cli][help]") {
  using ezpz::cli::wrap;
  CHECK(wrap("a bb ccc dddd", 8, 0, 2) == "a bb ccc\n  dddd");
  CHECK(wrap("a bb ccc dddd", 80, 70, 70) == "a bb ccc\n" + std::string(70, ' ') + "dddd");
  CHECK(wrap("averyveryverylongword x", 10, 0, 0) == "averyveryverylongword\nx");
  CHECK(wrap("", 10, 0, 0).empty());
  CHECK(wrap("  spaced   out  ", 80, 0, 0) == "spaced out");
}
