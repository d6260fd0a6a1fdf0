// The rank channel over real sockets: a shim's link says who it is, its bytes become the hub's
// lines, its end is heard; stops through the shims hold their ends until every rank ended; the
// hub's kill and its death reach the link; a stranger without the secret is refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <future>

#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

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

TEST_CASE("rank channel: a shim's lines, its end and its host reach the hub", "[rank_channel]") {
  sys::SecureRankChannels channels;
  auto hub = quiet_hub(channels);
  auto link = shim_of(channels, *hub, 1);
  REQUIRE(link);
  CHECK(link->send_output(1, "step 1\nstep"));
  CHECK(link->send_output(2, "warn\n"));
  CHECK(link->send_output(1, " 2 of 3"));
  core::RankExit exit;
  exit.rank = 1;
  exit.host = "node7";
  exit.exit_code = 3;
  exit.time = 12;
  exit.last_lines = {"warn"};
  CHECK(link->send_exit(exit));
  link.reset();  // the shim ends: its connection closes
  hub->finish(10, 1);
  const auto ranks = hub->ranks();
  REQUIRE(ranks.size() == 2);
  CHECK(ranks[0].host.empty());  // rank 0 never called
  CHECK_FALSE(ranks[0].ended);
  CHECK(ranks[1].host == "node7");
  CHECK(ranks[1].ended);
  CHECK(ranks[1].exit_code == 3);
  CHECK(ranks[1].last_line == "step 2 of 3");
  const auto exits = hub->exits();
  REQUIRE(exits.size() == 1);
  CHECK(exits[0] == exit);
  const auto quiet = core::quiet_report(hub->ranks(), 20, 0);
  REQUIRE(quiet.size() >= 2);
  CHECK_THAT(quiet[1], Catch::StartsWith("  rank 0: no output in "));
}

TEST_CASE("rank channel: the shim has the hub's grace before it sends anything", "[rank_channel]") {
  sys::SecureRankChannels channels;
  auto hub = quiet_hub(channels);
  auto link = shim_of(channels, *hub, 1);
  REQUIRE(link);
  CHECK(link->kill_after() == Approx(3.5));  // read with the hello's answer: nothing of the hub's left unread
}

TEST_CASE("rank channel: a link begun before the command starts is answered while it starts", "[rank_channel]") {
  sys::SecureRankChannels channels;
  auto hub = quiet_hub(channels);
  std::string why;
  auto pending = channels.begin_hub(hub_env(*hub, hub->key()), 1, "node7", why);
  REQUIRE(pending);
  // The hub takes the hello and answers before the shim comes back for it (its rank started).
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{hub->fds().front(), POLLIN, 0};
    if (::poll(&p, 1, 20) > 0) {
      (void)hub->service(p.fd);
    }
  }
  // Only the hub's answer to the hello itself is left to wait for.
  auto finishing = std::async(std::launch::async, [&] { return pending->finish(10000, why); });
  auto link = serve_until(*hub, finishing);
  REQUIRE(link);
  CHECK(link->send_output(1, "started\n"));
  link.reset();
  hub->finish(10, 1);
  CHECK(hub->ranks()[1].host == "node7");
  CHECK(hub->ranks()[1].last_line == "started");
}

TEST_CASE("rank channel: a hub that is gone is said at once, before the command starts", "[rank_channel]") {
  sys::SecureRankChannels channels;
  std::string address;
  {
    auto hub = quiet_hub(channels);
    address = hub->address();
  }  // closed: its port refuses
  std::string why;
  CHECK(
      channels.begin_hub(test::make_env({{"EZPZ_RANK_HUB", address}, {"EZPZ_RANK_HUB_KEY", std::string(64, 'a')}}, "n"),
                         0, "n", why) == nullptr);
  CHECK_THAT(why, Catch::Contains("cannot connect to " + address));
}

TEST_CASE("rank channel: a stop through the shims holds every shim's end until all ranks ended", "[rank_channel]") {
  sys::SecureRankChannels channels;
  auto hub = quiet_hub(channels);  // 2 ranks
  auto link0 = shim_of(channels, *hub, 0);
  auto link1 = shim_of(channels, *hub, 1);
  REQUIRE(link0);
  REQUIRE(link1);
  auto hears_stop = [&](core::RankLink& link) {
    auto heard = std::async(std::launch::async, [&] {
      pollfd p{link.fd(), POLLIN, 0};
      for (int i = 0; i < 100; ++i) {
        if (::poll(&p, 1, 100) == 1) {
          const auto h = link.hear();
          if (h != core::RankLink::Heard::nothing) {
            return h;
          }
        }
      }
      return core::RankLink::Heard::nothing;
    });
    return serve_until(*hub, heard);
  };
  REQUIRE(hub->stop_ranks(SIGTERM));
  CHECK(hears_stop(*link0) == core::RankLink::Heard::stop);
  CHECK(hears_stop(*link1) == core::RankLink::Heard::stop);
  CHECK(link0->stop_signal() == SIGTERM);
  core::RankExit exit;
  exit.rank = 0;
  exit.exit_code = 143;
  REQUIRE(link0->send_exit(exit));
  // Rank 0 ended, rank 1 has not: rank 0's shim waits (here its wait ends at its deadline).
  auto waited = std::async(std::launch::async, [&] {
    const auto t0 = std::chrono::steady_clock::now();
    link0->await_release(1.0, false);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  CHECK(serve_until(*hub, waited) >= 0.9);
  CHECK_FALSE(hub->ranks_ended());
  exit.rank = 1;
  exit.exit_code = 0;
  REQUIRE(link1->send_exit(exit));
  serve_until_ended(*hub);  // the hub takes the report
  REQUIRE(hub->ranks_ended());
  hub->release_ranks();
  auto released = std::async(std::launch::async, [&] {
    const auto t0 = std::chrono::steady_clock::now();
    link1->await_release(30, true);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  CHECK(serve_until(*hub, released) < 10);
}

TEST_CASE("rank channel: under a hub that stops its ranks, a shim ends only once its report is heard",
          "[rank_channel]") {
  sys::SecureRankChannels channels;
  auto hub = quiet_hub(channels, true);
  auto link = shim_of(channels, *hub, 0);
  REQUIRE(link);
  core::RankExit exit;
  exit.rank = 0;
  exit.exit_code = 1;
  REQUIRE(link->send_exit(exit));
  auto waited = std::async(std::launch::async, [&] { link->await_release(30, false); });
  // Unheard, the shim does not end: a stop on its way to it would be unread at its close.
  CHECK(waited.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout);
  auto ended = std::async(std::launch::async, [&] {
    const auto t0 = std::chrono::steady_clock::now();
    waited.get();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  CHECK(serve_until(*hub, ended) < 10);
  CHECK(hub->ranks_ended());
  CHECK(link->stop_signal() == 0);
}

TEST_CASE("rank channel: a rank that ended well ends its shim once the hub's node has the report", "[rank_channel]") {
  sys::SecureRankChannels channels;
  auto hub = quiet_hub(channels, true);  // 2 ranks, the hub stops them itself
  auto link0 = shim_of(channels, *hub, 0);
  auto link1 = shim_of(channels, *hub, 1);
  REQUIRE(link0);
  REQUIRE(link1);
  core::RankExit exit;
  exit.rank = 0;
  REQUIRE(link0->send_exit(exit));
  // Not served: no answer comes, and none is needed (over loopback every byte is acked at once).
  const auto t0 = std::chrono::steady_clock::now();
  link0->await_release(30, true);
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 5);
  // A stop sent after it (the shim gone, the stop unread at its close: a reset) finds the report
  // read all the same, and the other rank stopped.
  REQUIRE(hub->stop_ranks(SIGTERM));
  link0.reset();
  auto rank1_stopped = std::async(std::launch::async, [&] {
    pollfd p{link1->fd(), POLLIN, 0};
    while (::poll(&p, 1, 10000) == 1 && link1->hear() == core::RankLink::Heard::nothing) {
    }
    return link1->stop_signal();
  });
  CHECK(serve_until(*hub, rank1_stopped) == SIGTERM);
  exit.rank = 1;
  exit.exit_code = 143;
  REQUIRE(link1->send_exit(exit));
  serve_until_ended(*hub);
  CHECK(hub->ranks_ended());
  CHECK(hub->take_failure().has_value());  // rank 1's, the only one that failed
}

TEST_CASE("rank channel: a stop that crosses a shim's report holds that shim until every rank ended",
          "[rank_channel]") {
  sys::SecureRankChannels channels;
  auto hub = quiet_hub(channels, true);  // 2 ranks
  auto link0 = shim_of(channels, *hub, 0);
  auto link1 = shim_of(channels, *hub, 1);
  REQUIRE(link0);
  REQUIRE(link1);
  core::RankExit exit;
  exit.rank = 0;
  REQUIRE(link0->send_exit(exit));
  REQUIRE(hub->stop_ranks(SIGTERM));  // before the hub has read rank 0's report: it goes to both
  auto held = std::async(std::launch::async, [&] { link0->await_release(30, true); });  // exit 0
  auto rank1_stopped = std::async(std::launch::async, [&] {
    pollfd p{link1->fd(), POLLIN, 0};
    while (::poll(&p, 1, 10000) == 1 && link1->hear() == core::RankLink::Heard::nothing) {
    }
    return link1->stop_signal();
  });
  CHECK(serve_until(*hub, rank1_stopped) == SIGTERM);
  CHECK(held.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout);  // rank 1 runs
  exit.rank = 1;
  REQUIRE(link1->send_exit(exit));
  serve_until_ended(*hub);
  REQUIRE(hub->ranks_ended());
  hub->release_ranks();
  auto released = std::async(std::launch::async, [&] {
    held.get();
    link1->await_release(30, true);
    return true;
  });
  CHECK(serve_until(*hub, released));
  CHECK(link0->stop_signal() == SIGTERM);
}

TEST_CASE("rank channel: a shim that finds its stop and its release together ends at once", "[rank_channel]") {
  sys::SecureRankChannels channels;
  double fastest = 1e9;
  for (int round = 0; round < 3; ++round) {  // the fastest of three: a busy machine's stall is not the shim's
    auto hub = quiet_hub(channels, true);    // 2 ranks
    auto link0 = shim_of(channels, *hub, 0);
    auto link1 = shim_of(channels, *hub, 1);
    REQUIRE(link0);
    REQUIRE(link1);
    REQUIRE(hub->stop_ranks(SIGTERM));
    core::RankExit exit;
    for (auto* link : {link0.get(), link1.get()}) {
      REQUIRE(link->send_exit(exit));
      exit.rank = 1;
    }
    serve_until_ended(*hub);
    REQUIRE(hub->ranks_ended());
    hub->release_ranks();  // the stop and the release now wait, unread, in rank 0's socket
    pollfd p{link0->fd(), POLLIN, 0};
    REQUIRE(::poll(&p, 1, 10000) == 1);
    const auto t0 = std::chrono::steady_clock::now();
    link0->await_release(30, true);
    fastest = std::min(fastest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    CHECK(link0->stop_signal() == SIGTERM);
  }
  CHECK(fastest < 0.2);  // not a wait for bytes that came with the stop (the poll's 250 ms)
}

TEST_CASE("rank channel: a stop reaches a shim that calls after it (none called: the launcher's)", "[rank_channel]") {
  sys::SecureRankChannels channels;
  auto hub = quiet_hub(channels, true);   // 2 ranks
  CHECK_FALSE(hub->stop_ranks(SIGTERM));  // no shim has called: only the launcher reaches its ranks
  auto link1 = shim_of(channels, *hub, 1);
  REQUIRE(link1);
  CHECK(hub->stop_ranks(SIGINT));  // rank 0 has not called yet (a fast failure, an early Ctrl-C)
  pollfd p{link1->fd(), POLLIN, 0};
  REQUIRE(::poll(&p, 1, 10000) == 1);
  CHECK(link1->hear() == core::RankLink::Heard::stop);
  CHECK(link1->stop_signal() == SIGINT);
  auto link0 = shim_of(channels, *hub, 0);  // calls now: stopped at its hello
  REQUIRE(link0);
  pollfd p0{link0->fd(), POLLIN, 0};
  REQUIRE(::poll(&p0, 1, 10000) == 1);
  CHECK(link0->hear() == core::RankLink::Heard::stop);
  CHECK(link0->stop_signal() == SIGINT);
}

TEST_CASE("rank channel: the hub's kill and its end reach the shim", "[rank_channel]") {
  sys::SecureRankChannels channels;
  auto hub = quiet_hub(channels);
  auto link = shim_of(channels, *hub, 0);
  REQUIRE(link);
  hub->kill_ranks();
  pollfd p{link->fd(), POLLIN, 0};
  REQUIRE(::poll(&p, 1, 10000) == 1);
  CHECK(link->hear() == core::RankLink::Heard::kill);
  hub.reset();  // ezpz is gone
  REQUIRE(::poll(&p, 1, 10000) == 1);
  CHECK(link->hear() == core::RankLink::Heard::gone);
}

TEST_CASE("rank channel: no hub planned, a bad secret, or the wrong secret: no link", "[rank_channel]") {
  sys::SecureRankChannels channels;
  std::string why = "x";
  CHECK(channels.connect_hub(test::make_env({}, "n"), 0, "n", 1000, why) == nullptr);
  CHECK(why.empty());  // none planned is not a failure
  auto hub = quiet_hub(channels);
  CHECK(channels.connect_hub(hub_env(*hub, "zz"), 0, "n", 1000, why) == nullptr);
  CHECK_THAT(why, Catch::Contains("EZPZ_RANK_HUB_KEY"));
  const auto wrong = hub_env(*hub, std::string(64, 'a'));
  auto connecting = std::async(std::launch::async, [&] { return channels.connect_hub(wrong, 0, "n", 5000, why); });
  CHECK(serve_until(*hub, connecting) == nullptr);
  hub->finish(0.1, 0.1);
  CHECK(hub->exits().empty());
  CHECK(hub->ranks()[0].host.empty());
}

TEST_CASE("rank channel: a rank the console hides sends only its last line", "[rank_channel]") {
  sys::SecureRankChannels channels;
  auto hub = quiet_hub(channels);
  auto link = shim_of(channels, *hub, 0);
  REQUIRE(link);
  CHECK(link->send_progress(2, "epoch 4 of 9"));
  link.reset();
  hub->finish(10, 1);
  const auto ranks = hub->ranks();
  REQUIRE(ranks.size() == 2);
  CHECK(ranks[0].last_line == "epoch 4 of 9");
  CHECK(ranks[0].last_output > 0);
}
