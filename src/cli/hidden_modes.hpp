// Modes ezpz starts itself with fixed argv (raw rows of the command table): the local half of
// a command started on another node over the built-in transport, and a work directory's watcher.
#pragma once

#include "cli/command.hpp"

namespace ezpz::cli {

/// The halves of a transport ezpz runs itself: `ezpz __ssh-stdio ...` and `ezpz __agent-stdio
/// ...` (core::Transport::child_main), `ezpz __yeet-agent` (core::Transport::node_main).
/// Which half: the local end a transport starts on this node (child_main), or the node's end (node_main).
enum class TransportHalf { local, node };

class TransportChildCommand final : public Command {
 public:
  TransportChildCommand(core::TransportKind kind, TransportHalf half) : kind_(kind), half_(half) {}
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;
  std::optional<int> run_raw(Context& ctx, const std::vector<std::string>& args) override;

 private:
  core::TransportKind kind_;
  TransportHalf half_;
};

/// `ezpz __self-digest`: this binary's SHA-256 (hex) on stdout, what a node's start script
/// compares with the head's before it runs a relay (core::remote_command).
class SelfDigestCommand final : public Command {
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
