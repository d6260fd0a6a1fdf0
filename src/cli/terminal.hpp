// The only code that talks to the user. Results go to `out`, progress,
// warnings and errors to `err`. Colour only on a terminal and never with NO_COLOR.
#pragma once

#include <ostream>
#include <string_view>

#include "core/env.hpp"
#include "core/expected.hpp"

namespace ezpz::cli {

class Terminal {
 public:
  Terminal(std::ostream& out, std::ostream& err, bool color, bool interactive = false)
      : out_(out), err_(err), color_(color), interactive_(interactive) {}

  /// Whether stderr is a terminal: progress bars are drawn only then.
  [[nodiscard]] bool interactive() const { return interactive_; }

  /// Colour when stderr is a terminal, NO_COLOR is unset and TERM is not "dumb".
  [[nodiscard]] static bool want_color(const core::Env& env, bool stderr_is_tty);

  std::ostream& out() { return out_; }
  std::ostream& err() { return err_; }
  void error(std::string_view message);
  void warn(std::string_view message);
  /// Report `e` as an error line and return its exit code.
  int fail(const Error& e);

 private:
  void tagged(std::string_view tag, std::string_view color_code, std::string_view message);

  std::ostream& out_;
  std::ostream& err_;
  bool color_;
  bool interactive_;
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
