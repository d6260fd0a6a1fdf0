// The SSH transport's offer of a sealed TCP connection (sys/remote/ssh_tcp): the line the node
// half prints inside the channel is read back exactly, and nothing else passes for one.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "sys/remote/ssh_tcp.hpp"

using ezpz::sys::parse_tcp_offer;

TEST_CASE("ssh tcp offer: the port and the secret are read back, anything else is no offer", "[ssh_tcp]") {
  const std::string hex(64, 'a');
  const auto offer = parse_tcp_offer("EZPZ-TCP 40123 " + hex);
  REQUIRE(offer);
  CHECK(offer->port == 40123);
  CHECK(offer->secret[0] == 0xaa);
  CHECK(offer->secret[31] == 0xaa);
  const auto none = parse_tcp_offer("EZPZ-TCP 0 " + hex);  // no port: the command runs in place
  REQUIRE(none);
  CHECK(none->port == 0);
  for (const std::string& bad : std::vector<std::string>{
           "EZPZ-TCP 40123", "EZPZ-TCP 40123 " + hex + " x", "EZPZ-TCP 70000 " + hex, "EZPZ-TCP -1 " + hex,
           "EZPZ-TCP 40123 " + std::string(63, 'a'), "EZPZ-TCP 40123 " + std::string(64, 'g'), "EZPZ-SHIP 4096",
           "READY", " EZPZ-TCP 40123 " + hex, "EZPZ-TCP  40123 " + hex}) {
    INFO("line: " << bad);
    CHECK_FALSE(parse_tcp_offer(bad));
  }
}

TEST_CASE("ssh tcp node half: only the rows an agent runs, refused before anything is offered", "[ssh_tcp]") {
  CHECK(ezpz::sys::ssh_tcp_main({}) == 2);
  CHECK(ezpz::sys::ssh_tcp_main({"launch", "--", "sh"}) == 2);
  CHECK(ezpz::sys::ssh_tcp_main({"__ssh-tcp", "__yeet-relay"}) == 2);
}
