// TCP for the launcher transport: a listener on an ephemeral port, a connection with a deadline.
#pragma once

#include <optional>
#include <string>

#include "sys/os/fd_io.hpp"

namespace ezpz::sys {

/// A listening TCP socket on every IPv4 address of this node, on a port the kernel picks.
struct Listener {
  OwnedFd fd;
  int port = 0;
};
[[nodiscard]] std::optional<Listener> listen_any(std::string& why);
/// The same on one IPv4 address of this node ("" or not an IPv4 address: every one).
[[nodiscard]] std::optional<Listener> listen_on(const std::string& ipv4, std::string& why);

/// A connection to `address` ("name-or-ip:port") within `timeout_ms`; not valid, with `why`,
/// when it cannot be made.
[[nodiscard]] OwnedFd connect_to(const std::string& address, int timeout_ms, std::string& why);
/// connect_to in two halves: the socket and its connect begun, no waiting (not valid, with
/// `why`, when it cannot be); then the wait: 0 once it is up within `timeout_ms`, else its
/// error (ETIMEDOUT: still being made).
[[nodiscard]] OwnedFd begin_connect(const std::string& address, std::string& why);
[[nodiscard]] int wait_connected(int fd, int timeout_ms);
/// "cannot connect to ADDRESS: REASON" for a connection that failed with `err`.
[[nodiscard]] std::string connect_error(const std::string& address, int err);

/// Accept one connection (close-on-exec, non-blocking); not valid when none is waiting.
[[nodiscard]] OwnedFd accept_one(int listener);

/// TCP keepalive on `fd`, probing after 30 s of silence: a peer whose node died is noticed in
/// about a minute.
void keep_alive(int fd);

/// The IPv4 address the peer of `fd` connected from ("" when unknown).
[[nodiscard]] std::string peer_address(int fd);

}  // namespace ezpz::sys
