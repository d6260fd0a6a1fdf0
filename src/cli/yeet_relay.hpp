// The hidden halves of yeet to every node, started on other nodes over ssh:
//   ezpz __yeet-relay --host H --children TREE ...: one node of the fan-out.
//   ezpz __yeet-send --children TREE ...: this node's copy streamed to TREE (greedy pushes, repairs).
// Not in help or completions.
#pragma once

#include <string>

#include "cli/command.hpp"
#include "core/broadcast.hpp"

namespace ezpz::cli {

/// How a relay or sender reaches further nodes: the options the head passes down.
struct TransportArgs {
  std::string dst;
  std::string ssh_command;  ///< empty: built-in libssh
  std::string exe;
  std::string exe_digest;
  unsigned long long exe_size = 0;
  bool accept_new_host_keys = false;
  bool no_reattach = false;
  double stall_timeout_s = 30;
  double parent_silence_s = 0;
  std::string user;

  void add_options(CLI::App& app);
  [[nodiscard]] core::BroadcastSpec spec(const Context& ctx) const;
};

class YeetRelayCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;

 private:
  TransportArgs transport_;
  std::string host_;
  std::string children_;
};

class YeetSendCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;

 private:
  TransportArgs transport_;
  std::string children_;
};

/// "ssh -o BatchMode=yes" -> {"ssh", "-o", "BatchMode=yes"} (shell words).
[[nodiscard]] std::vector<std::string> split_command(const std::string& command);

}  // namespace ezpz::cli
