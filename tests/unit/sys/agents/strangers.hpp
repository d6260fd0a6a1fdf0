// Another user of a shared node at one of ezpz's ports: connections that stay silent, or that
// send only a client's hello (no secret needed), and what the listener's owner shows of itself
// in /proc/net/tcp (world-readable).
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <poll.h>
#include <sys/socket.h>

#include "sys/agents/net.hpp"

namespace ezpz::test {

/// `count` connections to `address` ("ip:port") that say nothing.
inline std::vector<sys::OwnedFd> silent_strangers(const std::string& address, int count) {
  std::vector<sys::OwnedFd> out;
  std::string why;
  for (int i = 0; i < count; ++i) {
    out.push_back(sys::connect_to(address, 5000, why));
    REQUIRE(out.back().valid());
  }
  return out;
}

/// A client's whole hello ("EZPZAGT1", flags, a nonce) on `fd`: what anyone can send without the
/// secret; the server answers it and then waits for a proof that never comes.
inline void send_hello_only(const sys::OwnedFd& fd) {
  std::string hello = "EZPZAGT1";
  hello += '\1';
  hello += std::string(32, 'n');
  REQUIRE(::send(fd.get(), hello.data(), hello.size(), MSG_NOSIGNAL) == 41);
}

/// Whether the other end closed `fd` within `timeout` (what it sent before is read and dropped).
inline bool closed_by_peer(const sys::OwnedFd& fd, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char sink[256];
  do {
    pollfd p{fd.get(), POLLIN, 0};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (::poll(&p, 1, static_cast<int>(std::clamp<long long>(left.count(), 0, 50))) > 0) {
      ssize_t n;
      while ((n = ::recv(fd.get(), sink, sizeof(sink), MSG_DONTWAIT)) > 0) {
      }
      if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        return true;
      }
    }
  } while (std::chrono::steady_clock::now() < deadline);
  return false;
}

/// The local address (hex, as /proc/net/tcp writes it: "0100007F" is 127.0.0.1, "00000000"
/// every address) of the IPv4 socket listening on `port`; "" when none.
inline std::string listening_address(int port) {
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);  // the header
  char want[8];
  std::snprintf(want, sizeof(want), ":%04X", port);
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string slot;
    std::string local;
    std::string remote;
    std::string state;
    words >> slot >> local >> remote >> state;
    if (state == "0A" && local.size() > 5 && local.substr(local.size() - 5) == want) {
      return local.substr(0, local.size() - 5);
    }
  }
  return "";
}

/// The port of "host:port".
inline int port_of(const std::string& address) {
  return std::stoi(address.substr(address.rfind(':') + 1));
}

}  // namespace ezpz::test
