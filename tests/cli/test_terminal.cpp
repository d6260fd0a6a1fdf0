// Colour per stream: --color, FORCE_COLOR / CLICOLOR_FORCE, NO_COLOR, terminals, TERM.
#include <catch2/catch.hpp>

#include <sstream>

#include "cli/terminal.hpp"

using ezpz::cli::ColorMode;
using ezpz::cli::Colors;
using ezpz::cli::Terminal;

namespace {

ezpz::core::Env env_of(std::map<std::string, std::string, std::less<>> vars) {
  ezpz::core::Env env;
  env.vars = std::move(vars);
  return env;
}

std::pair<bool, bool> colors(const ezpz::core::Env& env, bool out_tty, bool err_tty,
                             ColorMode mode = ColorMode::automatic) {
  const Colors c = Terminal::want_colors(env, {.out = out_tty, .err = err_tty}, mode);
  return {c.out, c.err};
}

}  // namespace

TEST_CASE("colour is decided for stdout and stderr alone", "[terminal]") {
  const auto xterm = env_of({{"TERM", "xterm"}});
  // `ezpz doctor > log` on a terminal: stderr coloured, the log not.
  CHECK(colors(xterm, false, true) == std::pair(false, true));
  CHECK(colors(xterm, true, false) == std::pair(true, false));
  CHECK(colors(xterm, true, true) == std::pair(true, true));
  CHECK(colors(xterm, false, false) == std::pair(false, false));
  // A dumb or unknown terminal gets none.
  CHECK(colors(env_of({{"TERM", "dumb"}}), true, true) == std::pair(false, false));
  CHECK(colors(env_of({}), true, true) == std::pair(false, false));
}

TEST_CASE("colour: --color, then FORCE_COLOR / CLICOLOR_FORCE, then NO_COLOR", "[terminal]") {
  const auto xterm = env_of({{"TERM", "xterm"}});
  CHECK(colors(xterm, false, false, ColorMode::always) == std::pair(true, true));
  CHECK(colors(xterm, true, true, ColorMode::never) == std::pair(false, false));
  CHECK(colors(env_of({{"NO_COLOR", "1"}, {"TERM", "xterm"}}), true, true) == std::pair(false, false));
  CHECK(colors(env_of({{"NO_COLOR", ""}, {"TERM", "xterm"}}), true, true) == std::pair(true, true));  // empty: unset
  CHECK(colors(env_of({{"NO_COLOR", "1"}}), true, true, ColorMode::always) == std::pair(true, true));
  for (const char* force : {"FORCE_COLOR", "CLICOLOR_FORCE"}) {
    CHECK(colors(env_of({{force, "1"}}), false, false) == std::pair(true, true));
    CHECK(colors(env_of({{force, "1"}, {"NO_COLOR", "1"}}), false, false) == std::pair(true, true));
    CHECK(colors(env_of({{force, "0"}}), false, false) == std::pair(false, false));
    CHECK(colors(env_of({{force, "1"}}), true, true, ColorMode::never) == std::pair(false, false));
  }
  CHECK(ezpz::cli::color_mode_from("auto") == ColorMode::automatic);
  CHECK(ezpz::cli::color_mode_from("always") == ColorMode::always);
  CHECK(ezpz::cli::color_mode_from("never") == ColorMode::never);
  CHECK_FALSE(ezpz::cli::color_mode_from("yes"));
}

TEST_CASE("colour: errors are coloured only where stderr is", "[terminal]") {
  std::ostringstream out, err;
  Terminal term(out, err, Colors{.out = true, .err = false});
  term.error("x");
  CHECK(err.str() == "ezpz: error: x\n");
  term.apply_color_mode(env_of({}), ColorMode::always);
  term.warn("y");
  CHECK(err.str().find("\033[1;33mwarning\033[0m: y") != std::string::npos);
  CHECK(term.color_out());
}
