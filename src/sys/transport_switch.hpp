// The transport a run's spec names (core::ReachSpec::transport): SSH or the job's launcher.
// What main wires as the one core::Transport every node-reaching port goes through.
#pragma once

#include "core/reach/transport.hpp"

namespace ezpz::sys {

class TransportSwitch final : public core::Transport {
 public:
  TransportSwitch(core::Transport& ssh, core::Transport& launcher) : ssh_(ssh), launcher_(launcher) {}
  [[nodiscard]] core::RemoteProcess start(const std::string& host, const core::RemoteCommand& command,
                                          const core::ReachSpec& spec, const std::string& report_as) override {
    return of(spec.transport).start(host, command, spec, report_as);
  }
  int child_main(core::TransportKind kind, const std::vector<std::string>& args) override {
    return of(kind).child_main(kind, args);
  }
  int node_main(core::TransportKind kind, const std::vector<std::string>& args) override {
    return of(kind).node_main(kind, args);
  }
  [[nodiscard]] std::map<std::string, std::string> open_nodes(const core::HostList& hosts, const core::ReachSpec& spec,
                                                              const std::atomic<bool>* stop,
                                                              const std::atomic<bool>* cancel) override {
    return of(spec.transport).open_nodes(hosts, spec, stop, cancel);
  }
  void close_nodes() override {
    ssh_.close_nodes();
    launcher_.close_nodes();
  }

 private:
  core::Transport& of(core::TransportKind kind) { return kind == core::TransportKind::launcher ? launcher_ : ssh_; }
  core::Transport& ssh_;
  core::Transport& launcher_;
};

}  // namespace ezpz::sys
