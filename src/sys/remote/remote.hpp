// Starting ezpz on other nodes: over the built-in libssh transport or a user's ssh command,
// with the binary shipped to nodes that lack it (see core::remote_command).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include <sys/types.h>

#include "core/broadcast.hpp"

namespace ezpz::sys {

/// Connections being set up at once when many nodes are asked the same thing (doctor --nodes,
/// kill --all-nodes): the rest wait at their gates. All at once, a hundred handshakes (and
/// the nodes' login shells) compete for the same moment and time out together.
inline constexpr std::size_t kMaxConnecting = 32;

/// A command running on another node: write its stdin to `in`, read its stdout from `out`.
struct RemoteProcess {
  pid_t pid = -1;
  int in = -1;
  int out = -1;
};

/// Run the shell command `command` on `host`: with spec.ssh_command empty through libssh in a
/// child running ezpz __ssh-stdio (a connection failure becomes a result line for `report_as`
/// on its stdout), else by exec'ing spec.ssh_command + host + command. `with_stdin` false gives it /dev/null.
/// `gated` (with stdin): the child connects only once one byte is written to `in` (its gate),
/// so many can be forked up front and opened a few at a time; closing `in` unopened ends it.
/// pid is -1 when nothing could be started.
[[nodiscard]] RemoteProcess start_remote(const std::string& host, const std::string& command,
                                         const core::BroadcastSpec& spec, const std::string& report_as, bool with_stdin,
                                         bool gated = false);

/// The hidden first argument that makes main() run ssh_stdio_main (the built-in transport).
inline constexpr std::string_view kSshStdio = "__ssh-stdio";

/// `ezpz __ssh-stdio REPORT_AS ACCEPT_NEW(0|1) USER HOST COMMAND` (argv from REPORT_AS on): run
/// COMMAND on HOST through libssh with this process's stdin and stdout; a connection failure
/// becomes a result line for REPORT_AS. Returns the exit status (255: no connection).
int ssh_stdio_main(int argc, char** argv);

/// Open the gate of a process started `gated`: it connects from now. False when it is gone.
[[nodiscard]] bool open_gate(RemoteProcess& p);

/// Wait for the remote ezpz's first line (core::kReadyLine), shipping this binary to a node
/// that asks for it (core::kShipLine). Lines that are neither (a connection error's result
/// line) are appended to `early`. False when it ended or was not ready within `timeout_s`.
[[nodiscard]] bool await_ready(RemoteProcess& p, std::string& early, int timeout_s);
/// The same, with `deadline` for the whole wait (a slow trickle of lines does not extend it).
[[nodiscard]] bool await_ready(RemoteProcess& p, std::string& early, std::chrono::steady_clock::time_point deadline);

/// SHA-256 (hex) and size of the running binary, for core::BroadcastSpec; empty on failure.
[[nodiscard]] std::pair<std::string, unsigned long long> self_digest();

}  // namespace ezpz::sys
