// The two halves of one command run through an agent, over a SecureChannel: the client (`ezpz
// __agent-stdio`, the local half a core::Transport starts) carries its stdin to the command and
// the command's stdout and stderr back; the agent's session process starts the command (this
// binary, an allowed hidden row) and carries the other way. Records:
//   client -> agent: 'Q' the command (a JSON array of arguments), 'D' stdin data, 'E' stdin ended
//   agent -> client: 'O' stdout data, 'R' stderr data, 'X' the exit status, 'N' refused (why)
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sys/agents/secure_channel.hpp"

namespace ezpz::sys {

/// An agent's session on `channel`, a connection through its handshake (the agent's: a peer
/// without the secret gets nothing and nothing runs): the command, the carrying. Returns the
/// process exit status for the session process.
int serve_session(SecureChannel& channel);

/// The node half on an opened channel whose command is already known (`args`, this binary's
/// hidden row): start it, carry, send its exit status. Returns that status (255 when it could
/// not start or the connection was lost). yeet's relay reads the client's records itself (its
/// stdin is the connection, the receiving keys come on a pipe named by --sealed-stdin): only
/// its output and status pass through here.
int serve_command(SecureChannel& channel, const std::vector<std::string>& args);

/// The client half on an opened channel: send `args`, then carry stdin (fd 0) to the command and
/// its output to fds 1 and 2 until it ends. Returns its exit status (255 when the connection
/// was lost or refused; `why` says so).
int run_client(SecureChannel& channel, const std::vector<std::string>& args, std::string& why);

/// What else the client half serves while it carries (see carry_client).
struct ClientSide {
  std::string first_input;         ///< stdin bytes already read elsewhere: sent before the rest
  int watch_fd = -1;               ///< another descriptor kept alive meanwhile (an SSH session)
  std::function<bool()> on_watch;  ///< called when watch_fd is readable; false: stop watching it
};

/// run_client's carrying, for a command the node half already knows (no request is sent).
int carry_client(SecureChannel& channel, const ClientSide& side, std::string& why);

}  // namespace ezpz::sys
