// yeet's in-process SSH transport (libssh): run one command on a node with this process's
// stdin and stdout joined to the command's. Run by ezpz __ssh-stdio (sys/remote.cpp), so the rest of the code
// sees the same pipes and pid it would see with the system ssh client.
#pragma once

#include <string>

namespace ezpz::sys {

/// How the command's stdin and output travel: inside the SSH channel, or (the command started as
/// `ezpz __ssh-tcp ...`, sys/remote/ssh_tcp.hpp) over the sealed TCP connection it offers,
/// encrypted or authenticated only (--no-encrypt).
enum class SshCarry { channel, tcp_sealed, tcp_clear };

struct SshOptions {
  bool accept_new_host_keys = false;  ///< add unknown host keys to known_hosts (never replaces one)
  std::string user;                   ///< login name when ~/.ssh/config names none ($USER)
  long connect_timeout_s = 30;
  SshCarry carry = SshCarry::channel;
};

/// Connect to `host` (honouring ~/.ssh/config: HostName, User, Port, IdentityFile,
/// UserKnownHostsFile), check its host key, authenticate with the agent or default keys, run
/// `command` (a shell command line, quoted by the caller) and pump stdin to it and its stdout
/// and stderr to ours until it ends. Returns its exit status; 255 with `error` set (one line
/// naming the host and the fix) when the connection could not be made.
int ssh_run_stdio(const std::string& host, const std::string& command, const SshOptions& options, std::string& error);

}  // namespace ezpz::sys
