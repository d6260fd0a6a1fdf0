// What every subcommand provides. One .hpp/.cpp pair per subcommand; the table
// in registry.cpp lists them.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/env.hpp"
#include "core/probe.hpp"
#include "core/process.hpp"
#include "core/transfer.hpp"

namespace CLI {
class App;
}

namespace ezpz::cli {

class Terminal;

struct Context {
  const core::Env& env;
  Terminal& term;
  const core::SystemProbe& probe;
  core::ProcessControl& process;
  core::LocalTransfer& transfer;
  const CLI::App& root;  ///< the whole CLI tree (help and completions walk it)
};

class Command {
 public:
  virtual ~Command() = default;
  /// Register this subcommand's options on its CLI11 app.
  virtual void add_cli(CLI::App& app) = 0;
  /// Run after parsing; returns the process exit code.
  virtual int run(Context& ctx) = 0;
  /// Rewrite the tokens between the subcommand name and "--" before CLI11 sees them (launch maps
  /// ezpz's single-dash aliases such as -np and keeps the launcher's flags aside). Default: none.
  virtual void normalize(std::vector<std::string>& /*tokens*/, bool /*had_separator*/) {}
  /// Whether a command after "--" belongs to this subcommand.
  [[nodiscard]] virtual bool takes_trailing_command() const { return false; }
  virtual void set_trailing_command(std::vector<std::string> /*command*/, bool /*had_separator*/) {}
};

struct CommandInfo {
  std::string_view name;
  std::string_view help;
  std::unique_ptr<Command> (*make)();
  bool hidden = false;  ///< internal: not in help or completions
};

/// Every registered subcommand, in help order.
[[nodiscard]] const std::vector<CommandInfo>& command_table();

}  // namespace ezpz::cli
