// What the rank channel tests share: serving a hub while a shim calls from another thread, a
// quiet hub, a shim's link (tests/unit/sys/ranks).
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <poll.h>

#include "fake_probe.hpp"
#include "sys/ranks/rank_channels.hpp"

namespace ezpz::test {

/// Serve the hub until `done` is ready (the shim's side runs in another thread).
template <typename T>
T serve_until(core::RankHub& hub, std::future<T>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (done.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready &&
         std::chrono::steady_clock::now() < deadline) {
    std::vector<pollfd> fds;
    for (int fd : hub.fds()) {
      fds.push_back({fd, POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), 20) > 0) {
      for (const auto& p : fds) {
        if (p.revents != 0) {
          (void)hub.service(p.fd);
        }
      }
    }
  }
  return done.get();
}

/// Serve the hub until every rank that reached it has reported its end (at most 30 s).
inline void serve_until_ended(core::RankHub& hub) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!hub.ranks_ended() && std::chrono::steady_clock::now() < deadline) {
    pollfd p{hub.fds().front(), POLLIN, 0};
    if (::poll(&p, 1, 20) > 0) {
      (void)hub.service(p.fd);
    }
  }
}

inline core::Env hub_env(const core::RankHub& hub, const std::string& key) {
  return make_env({{"EZPZ_RANK_HUB", hub.address()}, {"EZPZ_RANK_HUB_KEY", key}}, "node7");
}

inline std::unique_ptr<core::RankHub> quiet_hub(sys::SecureRankChannels& channels, bool stops_ranks = false) {
  core::HubOptions options;
  options.stops_ranks = stops_ranks;
  options.host = "127.0.0.1";
  options.nprocs = 2;
  options.console = {{9, 9}};  // rank 9 only: nothing reaches the test's own output
  options.kill_after_s = 3.5;
  auto hub = channels.open_hub(options);
  REQUIRE(hub);
  return std::move(*hub);
}

/// Rank `rank`'s link on node7, connected while the hub serves.
inline std::unique_ptr<core::RankLink> shim_of(sys::SecureRankChannels& channels, core::RankHub& hub, int rank) {
  const auto env = hub_env(hub, hub.key());
  std::string why;
  auto connecting =
      std::async(std::launch::async, [&] { return channels.connect_hub(env, rank, "node7", 10000, why); });
  return serve_until(hub, connecting);
}

}  // namespace ezpz::test
