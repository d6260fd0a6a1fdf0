// The only code that talks to the user. Results go to `out`, progress,
// warnings and errors to `err`. Colour is decided for each stream alone: --color, then
// FORCE_COLOR / CLICOLOR_FORCE, then NO_COLOR, then whether that stream is a terminal.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/env.hpp"
#include "core/base/expected.hpp"

namespace ezpz::cli {

/// Whether each stream gets colour.
struct Colors {
  bool out = false;
  bool err = false;
  static constexpr Colors none() { return {}; }
  static constexpr Colors both() { return {true, true}; }
};

/// Which standard streams are terminals.
struct Ttys {
  bool out = false;  ///< stdout: a person reads it, not a script
  bool err = false;  ///< stderr: progress bars are drawn only then
};

/// --color=auto|always|never.
enum class ColorMode { automatic, always, never };
/// The mode a --color value names; nullopt for any other word.
std::optional<ColorMode> color_mode_from(std::string_view word);

class Terminal {
 public:
  Terminal(std::ostream& out, std::ostream& err, Colors colors, Ttys ttys = {})
      : out_(out), err_(err), colors_(colors), interactive_(ttys.err), out_tty_(ttys.out) {}

  /// Whether stderr is a terminal: progress bars are drawn only then.
  [[nodiscard]] bool interactive() const { return interactive_; }
  /// Whether stdout is a terminal (a person reads it, not a script).
  [[nodiscard]] bool out_is_tty() const { return out_tty_; }

  /// For each stream: `mode` always/never decides; else FORCE_COLOR or CLICOLOR_FORCE (set, not
  /// empty, not "0") turns colour on; else NO_COLOR (set, not empty) turns it off; else colour
  /// when that stream is a terminal and TERM is set and not "dumb".
  [[nodiscard]] static Colors want_colors(const core::Env& env, Ttys ttys, ColorMode mode = ColorMode::automatic);
  /// Decide again once --color is known (the streams' terminals as given at construction).
  void apply_color_mode(const core::Env& env, ColorMode mode) {
    colors_ = want_colors(env, {.out = out_tty_, .err = interactive_}, mode);
  }
  /// The width help is wrapped at: COLUMNS when set, else the terminal's (`columns`; 0 when
  /// stdout is none: 80); at least 40 and at most 100 (longer lines read badly).
  [[nodiscard]] static std::size_t help_width(const core::Env& env, std::size_t columns);
  [[nodiscard]] std::size_t width() const { return width_; }
  void set_width(std::size_t width) { width_ = width; }
  [[nodiscard]] bool color_out() const { return colors_.out; }
  [[nodiscard]] bool color_err() const { return colors_.err; }

  std::ostream& out() { return out_; }
  std::ostream& err() { return err_; }
  void error(std::string_view message);
  void warn(std::string_view message);
  /// Report `e` as an error line and return its exit code.
  int fail(const Error& e);

  /// JSON mode: `command` was given --json. A failure then prints one JSON object on stdout too.
  void set_json(std::string command) { json_command_ = std::move(command); }
  [[nodiscard]] bool json() const { return !json_command_.empty(); }
  /// Print the command's own JSON result (`text`, one object or array a line; a newline is
  /// added): after it, a failure prints no object of its own.
  void print_json(std::string_view text);
  /// What a failure from here on leaves as it was (a destination, an archive), for the failure
  /// object's "unchanged"; replaces what was said before (empty: nothing to promise).
  void set_unchanged(std::vector<std::string> what) { unchanged_ = std::move(what); }
  /// The end of a run: in JSON mode, when the command failed (`exit_code` not 0) and printed no
  /// JSON, one object on stdout: {"ok": false, "command", "exit_code", "error" (the first error
  /// line, as on stderr, without colour), "errors", "unchanged"}.
  void finish(int exit_code);

 private:
  void tagged(std::string_view tag, std::string_view color_code, std::string_view message);

  std::ostream& out_;
  std::ostream& err_;
  Colors colors_;
  bool interactive_;
  bool out_tty_;
  std::size_t width_ = 80;
  std::string json_command_;
  bool json_printed_ = false;
  std::vector<std::string> errors_;  ///< every error line, in order
  std::vector<std::string> unchanged_;
};

/// A one-line progress bar on stderr: bytes done of total, rate and ETA, redrawn at most
/// ten times a second, only on a terminal.
class ProgressBar {
 public:
  ProgressBar(Terminal& term, std::string label, unsigned long long total);
  ~ProgressBar();
  /// `note` is appended to the line (e.g. nodes done, aggregate rate).
  void update(unsigned long long done, std::string_view note = {});
  void finish();

 private:
  Terminal& term_;
  std::string label_;
  unsigned long long total_;
  long long start_ns_;
  long long last_ns_ = 0;
  bool drawn_ = false;
};

}  // namespace ezpz::cli
