// The hidden halves of yeet to every node, started on other nodes over a transport:
//   ezpz __yeet-relay --host H --children TREE ...: one node of the fan-out.
//   ezpz __yeet-send --children TREE ...: this node's copy streamed to TREE (greedy pushes, repairs).
// Raw rows: their flags are core::relay_flags(), parsed by core::parse_relay_args (the same
// table builds their argv on the node that starts them). Not in help or completions.
#pragma once

#include <string>

#include "cli/command.hpp"
#include "core/base/shell.hpp"
#include "core/yeet/relay_args.hpp"

namespace ezpz::cli {

using core::split_command;

class YeetRelayCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;
  std::optional<int> run_raw(Context& ctx, const std::vector<std::string>& args) override;

 private:
  core::RelayArgs args_;
};

class YeetSendCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;
  std::optional<int> run_raw(Context& ctx, const std::vector<std::string>& args) override;

 private:
  core::RelayArgs args_;
};

}  // namespace ezpz::cli
