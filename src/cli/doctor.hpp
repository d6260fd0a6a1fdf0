// ezpz doctor [--nodes] [--launch] [--script FILE] [--json]: a preflight of this host, every node of the job
// (over yeet's ssh transport) and the launch line, with a remedy for every problem.
#pragma once

#include <string>

#include "cli/command.hpp"
#include "core/reach/reach.hpp"

namespace ezpz::cli {

class DoctorCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;

 private:
  CLI::App* app_ = nullptr;
  bool json_ = false;
  bool nodes_ = false;
  bool launch_ = false;
  bool all_ = false;
  int timeout_s_ = 10;
  core::ReachOptions reach_;  ///< --hostfile, --transport, --ssh-command, --accept-new-host-keys, --no-hsn
  std::string machine_, launcher_;
  std::string dst_ = "/tmp";
  std::string script_;  ///< --script: a batch script checked for traps
};

/// ezpz __doctor-node --dst PATH --exe PATH: one node's side of doctor --nodes. Prints
/// EZPZ-READY, reads one line (the ping), answers with one JSON line of facts (core::NodeFacts).
/// With --rank-env: prints the rank's torchrun variables (doctor --launch) and exits.
class DoctorNodeCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;

 private:
  std::string dst_ = "/tmp";
  std::string exe_;
  bool rank_env_ = false;
  bool probe_ = false;  ///< failover's probe: one JSON line, exit 0 when this node is fit
  int gpus_ = 0;
  std::string need_;
  std::string log_level_;  ///< the head's -v
  [[nodiscard]] int fitness(Context& ctx) const;
};

}  // namespace ezpz::cli
