// Modes ezpz starts itself with fixed argv (raw rows of the command table): the local half of
// a command started on another node over the built-in transport, and a work directory's watcher.
#pragma once

#include "cli/command.hpp"

namespace ezpz::cli {

/// `ezpz __ssh-stdio REPORT_AS ACCEPT_NEW USER HOST COMMAND` (see core::Transport::child_main).
class TransportChildCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;
  std::optional<int> run_raw(Context& ctx, const std::vector<std::string>& args) override;
};

/// `ezpz __yeet-janitor ...` (see core::Staging::watcher_main).
class WatcherCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;
  std::optional<int> run_raw(Context& ctx, const std::vector<std::string>& args) override;
};

}  // namespace ezpz::cli
