// Starting and supervising programs for real.
#pragma once

#include <memory>
#include <vector>

#include "core/process.hpp"

namespace ezpz::sys {

class SignalRelay;

class PosixProcessControl final : public core::ProcessControl {
 public:
  PosixProcessControl();
  ~PosixProcessControl() override;

  [[nodiscard]] Error exec_replace(const std::vector<std::string>& argv,
                                   const std::vector<std::pair<std::string, std::string>>& env) override;
  [[nodiscard]] Expected<core::RunResult> run(const std::vector<core::ProcessSpec>& processes,
                                              const core::RunOptions& options) override;
  [[nodiscard]] int reserve_tcp_port() override;
  [[nodiscard]] bool sleep_unless_interrupted(double seconds) override;
  [[nodiscard]] std::vector<core::ProcessInfo> job_processes() override;
  [[nodiscard]] std::vector<int> self_and_ancestors() override;
  bool send_signal(int pid, int sig) override;
  [[nodiscard]] bool alive(int pid) override;
  [[nodiscard]] std::vector<core::NodeOutput> run_on_nodes(const core::HostList& hosts,
                                                           const std::vector<std::string>& args,
                                                           const core::BroadcastSpec& spec, double timeout_s) override;

 private:
  SignalRelay& relay();

  std::unique_ptr<SignalRelay> relay_;  // installed on first use, kept across retries
  std::vector<int> reserved_ports_;     // sockets held open until exit
};

}  // namespace ezpz::sys
