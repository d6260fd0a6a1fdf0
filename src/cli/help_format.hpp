// Help that fits the terminal: every command's help from the CLI tree, wrapped at the width
// (80 columns off a terminal), placeholders instead of parser types (`--fanout N`, not
// `N:INT in [1 - 64]`), each option's aliases listed once after its description, groups under
// their own headings (yeet's "Expert options"), and a Usage line that says what the command
// takes (`ezpz submit [OPTIONS] -- COMMAND...`).
#pragma once

#include <functional>  // CLI/FormatterFwd.hpp needs it
#include <set>
#include <string>
#include <string_view>

#include <CLI/FormatterFwd.hpp>

namespace ezpz::cli {

/// `text` wrapped to `width` columns: the first line starts at column `first` (already taken by
/// what precedes it), the others are indented by `indent`. Words are never broken: one longer
/// than a line stands on its own.
std::string wrap(std::string_view text, std::size_t width, std::size_t first, std::size_t indent);

class HelpFormatter final : public CLI::FormatterBase {
 public:
  explicit HelpFormatter(std::size_t width) : width_(width) {}
  /// The commands whose Usage ends in `-- COMMAND...` (they run a command of the user's).
  void set_trailing_commands(std::set<std::string> names) { trailing_ = std::move(names); }
  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override;

 private:
  [[nodiscard]] std::string usage(const CLI::App& app, const std::string& name) const;
  [[nodiscard]] std::string options(const CLI::App& app) const;
  [[nodiscard]] std::string commands(const CLI::App& app) const;
  [[nodiscard]] std::string row(const std::string& left, const std::string& text, std::size_t column) const;

  std::size_t width_;
  std::set<std::string> trailing_;
};

}  // namespace ezpz::cli
