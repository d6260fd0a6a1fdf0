// Starting ezpz on other nodes: over the built-in libssh transport or a user's ssh command,
// with the binary shipped to nodes that lack it (see core::remote_command).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include "core/reach/spec.hpp"
#include "core/reach/transport.hpp"
#include "sys/remote/ssh_client.hpp"

namespace ezpz::sys {

using core::RemoteProcess;

/// Run the shell command `command` on `host`: with spec.ssh_command empty through libssh in a
/// child running ezpz __ssh-stdio (a connection failure becomes a result line for `report_as`
/// on its stdout), else by exec'ing spec.ssh_command + host + command. `in`: its stdin
/// (core::Stdin; a gated pipe's child connects only once its gate byte is written). `carry`: how
/// the built-in transport carries the command's data (a command that offers TCP, started as
/// `ezpz __ssh-tcp ...`, for the TCP ones). pid is -1 when nothing could be started.
[[nodiscard]] RemoteProcess start_remote(const std::string& host, const std::string& command,
                                         const core::ReachSpec& spec, const std::string& report_as, core::Stdin in,
                                         SshCarry carry = SshCarry::channel);

/// The hidden first argument that makes main() run ssh_stdio_main (the built-in transport).
inline constexpr std::string_view kSshStdio = "__ssh-stdio";

/// `ezpz __ssh-stdio REPORT_AS ACCEPT_NEW(0|1) USER CARRY(channel|tcp|tcp-clear) HOST COMMAND`
/// (argv from REPORT_AS on): run COMMAND on HOST through libssh with this process's stdin and
/// stdout; a connection failure becomes a result line for REPORT_AS. Returns the exit status
/// (255: no connection).
int ssh_stdio_main(int argc, char** argv);

/// core::Transport over SSH: the built-in libssh client (a child running `ezpz __ssh-stdio`) or
/// the user's ssh command (spec.ssh_command). With the built-in client, a stream
/// (core::StdinLoad::stream) goes over a sealed TCP connection the node half offers
/// (`ezpz __ssh-tcp`, sys/remote/ssh_tcp.hpp), not through sshd.
class SshTransport final : public core::Transport {
 public:
  [[nodiscard]] core::RemoteProcess start(const std::string& host, const core::RemoteCommand& command,
                                          const core::ReachSpec& spec, const std::string& report_as) override;
  int child_main(core::TransportKind kind, const std::vector<std::string>& args) override;
  /// `ezpz __ssh-tcp ARGS...` (ssh_tcp_main).
  int node_main(core::TransportKind kind, const std::vector<std::string>& args) override;
};

}  // namespace ezpz::sys
