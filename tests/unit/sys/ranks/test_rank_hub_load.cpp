// The rank hub under load, over real sockets: strangers that stall hold up no shim nor the hub's
// end and are closed at its deadline; many shims calling at once are all heard; a flood of
// descriptors does not close the listener; a hub of one host listens on loopback only.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <future>

#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "fake_probe.hpp"
#include "sys/agents/net.hpp"
#include "sys/os/owned.hpp"
#include "sys/ranks/rank_channels.hpp"
#include "unit/sys/agents/strangers.hpp"
#include "unit/sys/ranks/rank_hub_fixture.hpp"

using namespace ezpz;
using test::hub_env;
using test::quiet_hub;
using test::serve_until;
using test::serve_until_ended;
using test::shim_of;

TEST_CASE("rank channel: strangers that stall hold up no shim behind them", "[rank_channel]") {
  sys::SecureRankChannels channels;
  auto hub = quiet_hub(channels);
  // Five connections that never finish a hello, queued ahead of the shim: a hub that waited on
  // each in turn (2 s apiece) would answer the shim only after its 4 s are up.
  std::vector<sys::OwnedFd> strangers;
  std::string why;
  for (int i = 0; i < 5; ++i) {
    strangers.push_back(sys::connect_to(hub->address(), 5000, why));
    REQUIRE(strangers.back().valid());
  }
  REQUIRE(::send(strangers[0].get(), "EZPZ", 4, MSG_NOSIGNAL) == 4);  // half a hello
  const auto env = hub_env(*hub, hub->key());
  auto connecting = std::async(std::launch::async, [&] { return channels.connect_hub(env, 1, "node7", 4000, why); });
  auto link = serve_until(*hub, connecting);
  REQUIRE(link);
  CHECK(link->send_output(1, "here\n"));
  link.reset();
  hub->finish(10, 1);
  const auto ranks = hub->ranks();
  REQUIRE(ranks.size() == 2);
  CHECK(ranks[0].host.empty());  // no stranger became a rank
  CHECK(ranks[1].host == "node7");
  CHECK(ranks[1].last_line == "here");
}

TEST_CASE("rank channel: many shims calling at once are all heard", "[rank_channel]") {
  sys::SecureRankChannels channels;
  core::HubOptions options;
  options.host = "127.0.0.1";
  options.nprocs = 48;
  options.console = {{99, 99}};  // none shown
  auto opened = channels.open_hub(options);
  REQUIRE(opened);
  auto& hub = **opened;
  const auto env = hub_env(hub, hub.key());
  auto calling = std::async(std::launch::async, [&] {
    std::vector<std::future<bool>> shims;
    for (int r = 0; r < options.nprocs; ++r) {
      shims.push_back(std::async(std::launch::async, [&, r] {
        std::string why;
        auto link = channels.connect_hub(env, r, "node" + std::to_string(r % 4), 20000, why);
        return link && link->send_output(1, "rank " + std::to_string(r) + "\n");
      }));
    }
    int linked = 0;
    for (auto& s : shims) {
      linked += s.get() ? 1 : 0;
    }
    return linked;
  });
  CHECK(serve_until(hub, calling) == options.nprocs);
  hub.finish(10, 1);
  for (const auto& w : hub.ranks()) {
    CHECK(w.host == "node" + std::to_string(w.rank % 4));
    CHECK(w.last_line == "rank " + std::to_string(w.rank));
  }
}

TEST_CASE("rank channel: 300 ranks ending at once are all heard through the hub's one descriptor", "[rank_channel]") {
  sys::SecureRankChannels channels;
  core::HubOptions options;
  options.host = "127.0.0.1";
  options.nprocs = 300;          // more than one wake's batch (256): the rest come at the next
  options.console = {{-1, -1}};  // no rank's lines reach the test's own output
  auto opened = channels.open_hub(options);
  REQUIRE(opened);
  auto& hub = **opened;
  CHECK(hub.fds().size() == 1);  // however many ranks: the supervision polls one descriptor
  const auto env = hub_env(hub, hub.key());
  std::vector<std::unique_ptr<core::RankLink>> links;
  auto connecting = std::async(std::launch::async, [&] {
    std::string why;
    for (int r = 0; r < 300; ++r) {
      links.push_back(channels.connect_hub(env, r, "node" + std::to_string(r % 7), 10000, why));
    }
    return std::all_of(links.begin(), links.end(), [](const auto& l) { return l != nullptr; });
  });
  REQUIRE(serve_until(hub, connecting));
  CHECK(hub.fds().size() == 1);
  for (int r = 0; r < 300; ++r) {  // every one says a line and its end before the hub reads any
    core::RankExit exit;
    exit.rank = r;
    exit.host = "node" + std::to_string(r % 7);
    exit.exit_code = r == 299 ? 4 : 0;
    REQUIRE(links[static_cast<std::size_t>(r)]->send_progress(1, "last of " + std::to_string(r)));
    REQUIRE(links[static_cast<std::size_t>(r)]->send_exit(exit));
  }
  links.clear();  // every shim ends at once
  hub.finish(10, 1);
  CHECK(hub.exits().size() == 300);
  const auto ranks = hub.ranks();
  REQUIRE(ranks.size() == 300);
  for (const auto& w : ranks) {
    CHECK(w.host == "node" + std::to_string(w.rank % 7));
    CHECK(w.last_line == "last of " + std::to_string(w.rank));
    CHECK(w.ended);
  }
  const auto failure = hub.take_failure();
  REQUIRE(failure);
  CHECK(failure->code == 4);
}

namespace {

/// Serve the hub for `ms` milliseconds (whatever comes is taken as it comes).
void serve_for(core::RankHub& hub, int ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{hub.fds().front(), POLLIN, 0};
    if (::poll(&p, 1, 20) > 0) {
      (void)hub.service(p.fd);
    }
  }
}

/// The descriptors this process has open.
int open_descriptors() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("rank channel: strangers that stay silent are closed at the hub's deadline, no other connection coming",
          "[rank_channel]") {
  sys::SecureRankChannels channels;
  auto hub = quiet_hub(channels);
  const auto start = std::chrono::steady_clock::now();
  auto strangers = test::silent_strangers(hub->address(), 40);
  for (int i = 0; i < 10; ++i) {
    test::send_hello_only(strangers[static_cast<std::size_t>(i)]);  // a hello, and never the proof
  }
  auto link = shim_of(channels, *hub, 1);  // served at once, however many wait beside it
  REQUIRE(link);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(8));
  // Nothing else connects: the strangers go at their deadline (10 s) all the same.
  std::size_t closed = 0;
  const auto deadline = start + std::chrono::seconds(25);
  while (closed < strangers.size() && std::chrono::steady_clock::now() < deadline) {
    serve_for(*hub, 100);
    closed = static_cast<std::size_t>(std::count_if(strangers.begin(), strangers.end(), [](const sys::OwnedFd& fd) {
      return test::closed_by_peer(fd, std::chrono::milliseconds(0));
    }));
  }
  CHECK(closed == strangers.size());
  CHECK(std::chrono::steady_clock::now() - start > std::chrono::seconds(5));  // not refused as garbage
  CHECK(link->send_output(1, "still here\n"));                                // the shim's connection stays
  link.reset();
  hub->finish(10, 1);
  CHECK(hub->ranks()[1].last_line == "still here");
}

TEST_CASE("rank channel: a stranger's hello does not hold up the hub's end", "[rank_channel]") {
  sys::SecureRankChannels channels;
  auto hub = quiet_hub(channels);
  auto link = shim_of(channels, *hub, 1);
  REQUIRE(link);
  core::RankExit exit;
  exit.rank = 1;
  exit.host = "node7";
  CHECK(link->send_exit(exit));
  link.reset();
  std::string why;
  const auto stranger = sys::connect_to(hub->address(), 5000, why);
  REQUIRE(stranger.valid());
  test::send_hello_only(stranger);  // answered; its proof never comes
  serve_for(*hub, 300);
  const auto start = std::chrono::steady_clock::now();
  hub->finish(10, 1);  // the one rank has ended: nothing to wait for
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(hub->exits().size() == 1);
}

TEST_CASE("rank channel: the hub goes on accepting after it ran out of descriptors", "[rank_channel]") {
  sys::SecureRankChannels channels;
  auto hub = quiet_hub(channels);
  // 40 connections queued at the listener, then a limit that leaves the hub room for a few: it
  // runs out of descriptors while it accepts them.
  auto strangers = test::silent_strangers(hub->address(), 40);
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
  {
    const sys::ScopeGuard restore([&saved] { (void)::setrlimit(RLIMIT_NOFILE, &saved); });
    rlimit low = saved;
    low.rlim_cur = static_cast<rlim_t>(open_descriptors() + 6);
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
    serve_for(*hub, 300);
    strangers.clear();  // they leave: their descriptors come back
    serve_for(*hub, 300);
  }
  auto link = shim_of(channels, *hub, 0);
  REQUIRE(link);
  CHECK(link->send_output(1, "after the flood\n"));
  link.reset();
  hub->finish(10, 1);
  CHECK(hub->ranks()[0].last_line == "after the flood");
}

TEST_CASE("rank channel: a hub whose ranks are all on this host listens on loopback only", "[rank_channel]") {
  sys::SecureRankChannels channels;
  auto hub = quiet_hub(channels);  // its host: 127.0.0.1
  CHECK(test::listening_address(test::port_of(hub->address())) == "0100007F");
}
