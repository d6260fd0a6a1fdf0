// The CLI tree: building it from the command table, parsing, dispatch.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/App.hpp>

#include "cli/command.hpp"
#include "cli/terminal.hpp"

namespace ezpz::cli {

class Cli {
 public:
  /// Help is wrapped at `width` columns.
  explicit Cli(std::size_t width = 80);

  struct Parsed {
    Command* command = nullptr;  ///< the subcommand to run; null when parsing finished the job
    int exit_code = 0;           ///< meaningful when command is null (help, version, errors)
    std::string name;            ///< the subcommand's name (its row in the command table)
  };

  /// Parse `args` (without argv[0]). Help, version and errors are printed to `term`, whose
  /// colours follow --color (decided with `env`) from the start.
  Parsed parse(std::vector<std::string> args, Terminal& term, const core::Env& env = {});

  /// The tree as parse() left it: complete when the command walks it (help, completions).
  [[nodiscard]] const CLI::App& tree() const { return app_; }
  /// The whole tree, every subcommand's options included.
  [[nodiscard]] CLI::App& app() {
    populate(nullptr);
    return app_;
  }
  /// The Command object registered under `name` (tests inspect parsed args through it).
  [[nodiscard]] Command* command(std::string_view name);
  [[nodiscard]] int verbosity() const { return verbosity_; }

 private:
  /// Register the options of `only` (all subcommands when null) if not done yet: a launch
  /// needs only its own, help and completions need the whole tree.
  void populate(const Command* only);
  /// Add the subcommand of `only` (all when null) to the tree if not there yet, in the table's
  /// order (a CLI11 subcommand costs ~20,000 instructions to build: every run built all 20).
  void attach(const Command* only);

  CLI::App app_;
  std::vector<bool> populated_;
  std::vector<std::pair<CLI::App*, std::unique_ptr<Command>>> commands_;  ///< by table row; null: not attached
  int verbosity_ = 0;
  std::string color_ = "auto";
};

/// Everything main does after taking the environment snapshot.
/// `ports` are the real system in main and fakes in tests.
int run_main(const std::vector<std::string>& args, const core::Env& env, Terminal& term, const Ports& ports);

}  // namespace ezpz::cli
