#include "cli/terminal.hpp"

namespace ezpz::cli {

bool Terminal::want_color(const core::Env& env, bool stderr_is_tty) {
  if (env.has("NO_COLOR")) {  // no-color.org: set and non-empty
    return false;
  }
  return stderr_is_tty && env.get("TERM").value_or("dumb") != "dumb";
}

void Terminal::tagged(std::string_view tag, std::string_view color_code, std::string_view message) {
  err_ << "ezpz: ";
  if (color_) {
    err_ << "\033[" << color_code << "m" << tag << "\033[0m";
  } else {
    err_ << tag;
  }
  err_ << ": " << message << '\n';
}

void Terminal::error(std::string_view message) {
  tagged("error", "1;31", message);
}
void Terminal::warn(std::string_view message) {
  tagged("warning", "1;33", message);
}

}  // namespace ezpz::cli
