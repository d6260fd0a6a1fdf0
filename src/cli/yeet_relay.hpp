// ezpz __yeet-relay --dst D --host H --children TREE --ssh-command CMD: one node of yeet's
// fan-out, started over ssh by its parent. Hidden: not in help or completions.
#pragma once

#include <string>

#include "cli/command.hpp"

namespace ezpz::cli {

class YeetRelayCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;

 private:
  std::string dst_;
  std::string host_;
  std::string children_;
  std::string ssh_command_ = "ssh";
};

/// ezpz __yeet-send --dst D --to HOST --ssh-command CMD: one push of --strategy greedy, from
/// the node this runs on (which has D) to HOST; prints HOST's result line.
class YeetSendCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;

 private:
  std::string dst_;
  std::string to_;
  std::string ssh_command_ = "ssh";
};

/// "ssh -o BatchMode=yes" -> {"ssh", "-o", "BatchMode=yes"} (shell words).
[[nodiscard]] std::vector<std::string> split_command(const std::string& command);

}  // namespace ezpz::cli
