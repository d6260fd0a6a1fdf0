// Both ends of a sealed channel over a socket pair, for the tests of what reads or writes it.
#pragma once

#include <catch2/catch.hpp>

#include <future>
#include <optional>
#include <string>

#include <sys/socket.h>

#include "sys/agents/secure_channel.hpp"

namespace ezpz::test {

struct ChannelPair {
  std::optional<sys::SecureChannel> client;
  std::optional<sys::SecureChannel> server;
  std::string client_why;
  std::string server_why;
};

inline sys::Secret filled_secret(unsigned char fill) {
  sys::Secret s{};
  s.fill(fill);
  return s;
}

/// Both ends of a socket pair through the handshake at once.
inline ChannelPair connect_pair(const sys::Secret& client_secret, const sys::Secret& server_secret, bool encrypt) {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  ChannelPair p;
  auto server = std::async(std::launch::async, [&] {
    return sys::SecureChannel::open(sys::OwnedFd(fds[1]), sys::SecureChannel::Role::server, server_secret,
                                    sys::SecureChannel::Sealing::encrypt, 5000, p.server_why);
  });
  p.client = sys::SecureChannel::open(
      sys::OwnedFd(fds[0]), sys::SecureChannel::Role::client, client_secret,
      encrypt ? sys::SecureChannel::Sealing::encrypt : sys::SecureChannel::Sealing::authenticate, 5000, p.client_why);
  p.server = server.get();
  return p;
}

}  // namespace ezpz::test
