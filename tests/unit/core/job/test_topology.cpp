#include <catch2/catch.hpp>

#include "core/job/topology.hpp"

using ezpz::core::resolve_topology;
using ezpz::core::Topology;
using ezpz::core::TopologyRequest;

namespace {
Topology ok(TopologyRequest r, int hosts, int gpus) {
  auto t = resolve_topology(r, hosts, gpus);
  INFO((t ? "" : t.error().message));
  REQUIRE(t);
  return *t;
}
std::string err(TopologyRequest r, int hosts, int gpus) {
  auto t = resolve_topology(r, hosts, gpus);
  REQUIRE_FALSE(t);
  CHECK(t.error().code == ezpz::ExitCode::usage);
  return t.error().message;
}
}  // namespace

TEST_CASE("topology: nothing given fills every host's GPUs", "[topology]") {
  CHECK(ok({}, 2, 12) == Topology{24, 12, 2});
  CHECK(ok({}, 1, 1) == Topology{1, 1, 1});
  CHECK(ok({}, 4, 0) == Topology{4, 1, 4});
}

TEST_CASE("topology: inferring the missing numbers", "[topology]") {
  CHECK(ok({.nprocs = 8}, 2, 12) == Topology{8, 4, 2});  // -n 8 on 2 Aurora nodes -> ppn 4
  CHECK(ok({.nprocs = 12, .ppn = 6}, 2, 12) == Topology{12, 6, 2});
  CHECK(ok({.nprocs = 8, .ppn = 4}, 4, 4) == Topology{8, 4, 2});  // a subset of the hosts
  CHECK(ok({.ppn = 2}, 3, 4) == Topology{6, 2, 3});
  CHECK(ok({.nhosts = 2}, 4, 4) == Topology{8, 4, 2});
  CHECK(ok({.ppn = 3, .nhosts = 2}, 4, 4) == Topology{6, 3, 2});
  CHECK(ok({.nprocs = 6, .nhosts = 3}, 4, 4) == Topology{6, 2, 3});
  CHECK(ok({.nprocs = 16, .ppn = 4, .nhosts = 4}, 4, 4) == Topology{16, 4, 4});
  CHECK(ok({.nprocs = 1}, 2, 4) == Topology{1, 1, 1});
  CHECK(ok({.nprocs = 8}, 1, 1) == Topology{8, 8, 1});  // a laptop may run more ranks than GPUs
}

TEST_CASE("topology: errors name the numbers", "[topology]") {
  CHECK_THAT(err({.nprocs = 13}, 2, 12), Catch::Contains("-n 13 does not divide evenly over 2 hosts"));
  CHECK_THAT(err({.nprocs = 12, .ppn = 5}, 4, 4), Catch::Contains("-n 12 is not a multiple of --ppn 5"));
  CHECK_THAT(err({.nprocs = 16, .ppn = 4}, 2, 4), Catch::Contains("needs 4 hosts but the allocation has 2 hosts"));
  CHECK_THAT(err({.nhosts = 3}, 2, 4), Catch::Contains("--nhosts 3 is more than the 2 hosts"));
  CHECK_THAT(err({.nprocs = 10, .ppn = 4, .nhosts = 2}, 2, 4),
             Catch::Contains("-n 10 disagrees with --nhosts 2 x --ppn 4 = 8"));
  CHECK_THAT(err({.nprocs = 0}, 2, 4), Catch::Contains("-n must be a positive number, got 0"));
  CHECK_THAT(err({.ppn = -1}, 2, 4), Catch::Contains("--ppn must be a positive number"));
  CHECK_THAT(err({.nprocs = 7, .nhosts = 2}, 2, 4), Catch::Contains("-n 7 does not divide evenly over 2 hosts"));
}
