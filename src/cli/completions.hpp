// ezpz completions bash|zsh|fish: scripts generated from the CLI11 tree, so they
// never drift from the options that exist.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command.hpp"

namespace ezpz::cli {

/// What a shell needs to know about one option or positional argument.
struct CompletionValue {
  enum class Kind { none, any, file, choices, command, subcommand } kind = Kind::none;
  std::vector<std::string> choices;
};

struct CompletionOption {
  std::vector<std::string> names;  ///< with dashes: "-n", "--np"
  std::string help;
  CompletionValue value;
};

struct CompletionCommand {
  std::string name;
  std::string help;
  std::vector<CompletionOption> options;
  CompletionValue positional;
};

struct CompletionModel {
  std::vector<CompletionOption> global;
  std::vector<CompletionCommand> commands;
};

/// Walk the CLI tree. Type names pick the value kind: FILE, MACHINE (built-in
/// machine names), {a,b} choices, COMMAND (an ezpz subcommand), CMD... (a program).
[[nodiscard]] CompletionModel completion_model(const CLI::App& root);

/// The script for `shell` ("bash", "zsh" or "fish"); nullopt for any other shell.
[[nodiscard]] std::optional<std::string> completion_script(std::string_view shell, const CLI::App& root);

class CompletionsCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;

 private:
  std::string shell_;
};

}  // namespace ezpz::cli
