// core::Transport through the job's launcher: open_nodes (the head) starts one agent per node with
// one launcher step and waits for each to register over a sealed TCP connection; start() runs a
// command on a node through its agent, in a child running `ezpz __agent-stdio` (the local half,
// like `ezpz __ssh-stdio` for SSH). A relay started by an agent reaches further agents through
// the directory and secret its agent put in its environment.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/reach/agents.hpp"
#include "core/reach/transport.hpp"
#include "sys/agents/secure_channel.hpp"
#include "sys/os/owned.hpp"

namespace ezpz::sys {

class AgentTransport final : public core::Transport {
 public:
  [[nodiscard]] core::RemoteProcess start(const std::string& host, const core::RemoteCommand& command,
                                          const core::ReachSpec& spec, const std::string& report_as) override;
  /// `ezpz __agent-stdio REPORT_AS HOST ADDRESS ENCRYPT(0|1) ARGS...`.
  int child_main(core::TransportKind kind, const std::vector<std::string>& args) override;
  /// `ezpz __yeet-agent`.
  int node_main(core::TransportKind kind, const std::vector<std::string>& args) override;
  [[nodiscard]] std::map<std::string, std::string> open_nodes(const core::HostList& hosts, const core::ReachSpec& spec,
                                                              const std::atomic<bool>* stop,
                                                              const std::atomic<bool>* cancel) override;
  void close_nodes() override;
  ~AgentTransport() override { close_nodes(); }

 private:
  /// Every agent's address: what open_nodes gathered, or (in a relay) what its agent gave it.
  const core::AgentDirectory& directory();
  /// The run's secret (hex): the one open_nodes made, or the one in the environment.
  std::string secret_hex();
  /// Whether end_step first gives the step 3 s to end on its own.
  enum class StepEnd { wait_first, at_once };
  /// Wait up to 3 s for the step to end on its own (unless StepEnd::at_once), then SIGTERM it and
  /// wait up to 3 s more; then SIGKILL.
  void end_step(StepEnd how);
  /// open_nodes' work: the step, the registrations; why each host that has no agent has none.
  std::map<std::string, std::string> start_agents(const core::HostList& hosts, const core::ReachSpec& spec,
                                                  const std::atomic<bool>* stop, const std::atomic<bool>* cancel);
  /// " (it said: ...)" from what the step printed, or "".
  [[nodiscard]] std::string step_said() const;
  /// The end of what the step printed.
  [[nodiscard]] std::string step_text() const;

  bool have_directory_ = false;
  core::AgentDirectory directory_;
  std::string secret_;
  OwnedChild step_;                             ///< the launcher step running the agents
  OwnedFd step_output_;                         ///< what the step printed (a memfd): its words when it fails
  std::map<std::string, std::string> missing_;  ///< why a host has no agent (open_nodes)
  std::vector<SecureChannel> controls_;         ///< each agent's registration: closing it stops the agent
};

}  // namespace ezpz::sys
