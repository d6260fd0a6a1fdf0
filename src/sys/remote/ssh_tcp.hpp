// The SSH transport's streams over TCP: sshd starts `ezpz __ssh-tcp ARGS...` on the node (the
// command the transport was asked for, prefixed), which listens on the address sshd took the
// session on and offers the port and a fresh secret on its stdout, inside the SSH channel. The
// local half (`ezpz __ssh-stdio`) connects and both prove they hold the secret
// (sys/agents/secure_channel); the command's stdin, stdout, stderr and exit status then go over
// that sealed connection (the agents' session records), and sshd carries nothing more. Where the
// port cannot be reached, the local half says so on the channel and the command runs in place,
// over SSH, as before.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sys/agents/secure_channel.hpp"

namespace ezpz::sys {

/// The hidden row that runs ssh_tcp_main on the node.
inline constexpr std::string_view kSshTcpRow = "__ssh-tcp";
/// The node half's first line: "EZPZ-TCP PORT SECRET" (a port of 0: none, the command runs in place).
inline constexpr std::string_view kTcpOffer = "EZPZ-TCP ";
/// The local half's answer on the channel when it cannot use the offer: run in place.
inline constexpr std::string_view kTcpDecline = "stdio\n";

struct TcpOffer {
  int port = 0;
  Secret secret{};
};
/// The offer in a line (without its newline), when it is one.
[[nodiscard]] std::optional<TcpOffer> parse_tcp_offer(std::string_view line);

/// `ezpz __ssh-tcp ARGS...` on the node: offer, then serve ARGS (one of the rows an agent runs)
/// over the connection that proves the secret, or in place on a decline. Returns its exit status.
int ssh_tcp_main(const std::vector<std::string>& args);

}  // namespace ezpz::sys
