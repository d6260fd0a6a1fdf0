// ezpz on many nodes at once over a core::Transport (kill --all-nodes), and one question asked
// of every node (doctor --nodes).
#pragma once

#include "core/ports/process.hpp"
#include "core/reach/transport.hpp"

namespace ezpz::sys {

class PosixNodeCommands final : public core::NodeCommands {
 public:
  explicit PosixNodeCommands(core::Transport& transport) : transport_(transport) {}
  [[nodiscard]] std::vector<core::NodeOutput> run_on_nodes(const core::HostList& hosts,
                                                           const std::vector<std::string>& args,
                                                           const core::ReachSpec& spec, double timeout_s) override;

 private:
  core::Transport& transport_;
};

class PosixNodeQuery final : public core::NodeQuery {
 public:
  explicit PosixNodeQuery(core::Transport& transport) : transport_(transport) {}
  [[nodiscard]] std::vector<core::NodeReply> ask_nodes(const std::vector<std::string>& hosts,
                                                       const core::RemoteCommand& command, const core::ReachSpec& spec,
                                                       int timeout_s,
                                                       const std::function<void()>& started) const override;

 private:
  core::Transport& transport_;
};

}  // namespace ezpz::sys
