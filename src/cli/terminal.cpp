#include "cli/terminal.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/base/strings.hpp"

namespace ezpz::cli {

std::optional<ColorMode> color_mode_from(std::string_view word) {
  if (word == "auto") {
    return ColorMode::automatic;
  }
  if (word == "always") {
    return ColorMode::always;
  }
  if (word == "never") {
    return ColorMode::never;
  }
  return std::nullopt;
}

std::size_t Terminal::help_width(const core::Env& env, std::size_t columns) {
  if (const auto c = env.get("COLUMNS"); c && c->find_first_not_of("0123456789") == std::string::npos) {
    columns = std::stoul(c->substr(0, 6));
  }
  return std::clamp<std::size_t>(columns == 0 ? 80 : columns, 40, 100);
}

Colors Terminal::want_colors(const core::Env& env, Ttys ttys, ColorMode mode) {
  if (mode != ColorMode::automatic) {
    return mode == ColorMode::always ? Colors::both() : Colors::none();
  }
  const auto forced = [&](const char* name) { return env.has(name) && env.get(name).value_or("0") != "0"; };
  if (forced("FORCE_COLOR") || forced("CLICOLOR_FORCE")) {  // force-color.org, bixense.com/clicolors
    return Colors::both();
  }
  if (env.has("NO_COLOR")) {  // no-color.org: set and non-empty
    return Colors::none();
  }
  const bool capable = env.get("TERM").value_or("dumb") != "dumb";
  return {.out = ttys.out && capable, .err = ttys.err && capable};
}

void Terminal::tagged(std::string_view tag, std::string_view color_code, std::string_view message) {
  err_ << "ezpz: ";
  if (colors_.err) {
    err_ << "\033[" << color_code << "m" << tag << "\033[0m";
  } else {
    err_ << tag;
  }
  err_ << ": " << message << '\n';
}

void Terminal::error(std::string_view message) {
  errors_.emplace_back(message);
  tagged("error", "1;31", message);
}
void Terminal::warn(std::string_view message) {
  tagged("warning", "1;33", message);
}

int Terminal::fail(const Error& e) {
  error(e.message);
  return static_cast<int>(e.code);
}

void Terminal::print_json(std::string_view text) {
  out_ << text << '\n';
  json_printed_ = true;
}

void Terminal::finish(int exit_code) {
  if (!json() || json_printed_ || exit_code == 0) {
    return;
  }
  nlohmann::ordered_json j = {
      {"ok", false},
      {"command", json_command_},
      {"exit_code", exit_code},
      {"error", errors_.empty() ? "ezpz " + json_command_ + " failed with exit code " + std::to_string(exit_code)
                                : errors_.front()},
      {"errors", errors_},
      {"unchanged", unchanged_},
  };
  print_json(j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
  out_.flush();
}

}  // namespace ezpz::cli

namespace ezpz::cli {
namespace {
long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

ProgressBar::ProgressBar(Terminal& term, std::string label, unsigned long long total)
    : term_(term), label_(std::move(label)), total_(total), start_ns_(now_ns()) {}

ProgressBar::~ProgressBar() {
  finish();
}

void ProgressBar::update(unsigned long long done, std::string_view note) {
  if (!term_.interactive()) {
    return;
  }
  const long long now = now_ns();
  if (now - last_ns_ < 100'000'000) {
    return;
  }
  last_ns_ = now;
  const double secs = static_cast<double>(now - start_ns_) / 1e9;
  const double rate = secs > 0 ? static_cast<double>(done) / secs : 0;
  std::string line = "\r  " + label_ + "  " + core::human_bytes(done);
  if (total_ > 0) {
    line += " / " + core::human_bytes(total_);
    char pct[16];
    std::snprintf(pct, sizeof(pct), "  %3.0f%%", 100.0 * static_cast<double>(done) / static_cast<double>(total_));
    line += pct;
  }
  line += "  " + core::human_bytes(static_cast<unsigned long long>(rate)) + "/s";
  if (total_ > done && rate > 0) {
    line += "  ETA " + std::to_string(static_cast<long long>(static_cast<double>(total_ - done) / rate)) + "s";
  }
  term_.err() << line << note << "\033[K" << std::flush;
  drawn_ = true;
}

void ProgressBar::finish() {
  if (drawn_) {
    term_.err() << "\r\033[K" << std::flush;
    drawn_ = false;
  }
}

}  // namespace ezpz::cli
