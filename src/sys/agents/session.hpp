// The two halves of one command run through an agent, over a SecureChannel: the client (`ezpz
// __agent-stdio`, the local half a core::Transport starts) carries its stdin to the command and
// the command's stdout and stderr back; the agent's session process starts the command (this
// binary, an allowed hidden row) and carries the other way. Records:
//   client -> agent: 'Q' the command (a JSON array of arguments), 'D' stdin data, 'E' stdin ended
//   agent -> client: 'O' stdout data, 'R' stderr data, 'X' the exit status, 'N' refused (why)
#pragma once

#include <string>
#include <vector>

#include "sys/agents/secure_channel.hpp"

namespace ezpz::sys {

/// An agent's session for the accepted connection `conn`: the handshake (within 10 s; a peer
/// without the secret gets nothing and nothing runs), the command, the carrying. Returns the
/// process exit status for the session process.
int serve_session(OwnedFd conn, const Secret& secret);

/// The client half on an opened channel: send `args`, then carry stdin (fd 0) to the command and
/// its output to fds 1 and 2 until it ends. Returns its exit status (255 when the connection
/// was lost or refused; `why` says so).
int run_client(SecureChannel& channel, const std::vector<std::string>& args, std::string& why);

}  // namespace ezpz::sys
