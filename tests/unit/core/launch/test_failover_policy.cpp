// The failover loop's policy (core::next_failover_step): after a failed attempt, from its verdict,
// stop, run the same nodes again, or swap bad nodes for spares, and what is said each time.
#include <catch2/catch.hpp>

#include "core/launch/failover_policy.hpp"

using namespace ezpz::core;
using Kind = FailoverStep::Kind;

namespace {

Verdict verdict(VerdictKind kind, std::vector<Eviction> evicted = {}) {
  return Verdict{kind, std::move(evicted)};
}

FailureSign sign(const std::string& what) {
  FailureSign s;
  s.what = what;
  s.lines = {"OSError: [Errno 28] " + what};
  return s;
}

const NodeSplit kSplit{{"n1", "n2", "n3", "n4"}, {"n5", "n6"}};

}  // namespace

TEST_CASE("failover policy: the time limit and a systemic failure stop at once", "[failover_policy]") {
  FailoverState state;
  auto step = next_failover_step(state, verdict(VerdictKind::walltime), {}, false, kSplit, {});
  CHECK(step.kind == Kind::stop);
  REQUIRE(step.warnings.size() == 1);
  CHECK_THAT(step.warnings[0], Catch::StartsWith("the job reached its time limit: no node is to blame"));
  step = next_failover_step(state, verdict(VerdictKind::systemic), sign("PMI/CCL KVS timeout"), false, kSplit,
                            {.retries = 3, .max_swaps = std::nullopt});
  CHECK(step.kind == Kind::stop);  // --retries cannot help a systemic failure
  CHECK(step.sign_after);
  CHECK_THAT(step.warnings[0], Catch::Contains("systemic: no node is at fault") &&
                                   Catch::Contains("every rank failed with PMI/CCL KVS timeout"));
}

TEST_CASE("failover policy: storage runs the same nodes again three times in a row, then stops", "[failover_policy]") {
  FailoverState state;
  for (int k = 1; k <= kStorageRetries; ++k) {
    auto step =
        next_failover_step(state, verdict(VerdictKind::storage), sign("No space left on device"), false, kSplit, {});
    INFO(k);
    CHECK(step.kind == Kind::same_nodes);
    CHECK(step.sign_after);
    CHECK_THAT(step.warnings[0], Catch::EndsWith("the same nodes again, no spare used (" + std::to_string(k) + " of " +
                                                 std::to_string(kStorageRetries) + ")"));
  }
  auto step =
      next_failover_step(state, verdict(VerdictKind::storage), sign("No space left on device"), false, kSplit, {});
  CHECK(step.kind == Kind::stop);
  CHECK_THAT(step.warnings[0], Catch::EndsWith("3 times in a row: not trying again"));
  // Another verdict between two storage errors starts the count again.
  FailoverState again;
  (void)next_failover_step(again, verdict(VerdictKind::storage), sign("x"), false, kSplit, {});
  (void)next_failover_step(again, verdict(VerdictKind::application), {}, false, kSplit, {.retries = 1});
  CHECK(again.storage_runs == 0);
}

TEST_CASE("failover policy: the application's failure runs again while --retries lasts", "[failover_policy]") {
  FailoverState state;
  const FailoverLimits one{.retries = 1, .max_swaps = std::nullopt};
  auto step = next_failover_step(state, verdict(VerdictKind::application), {}, false, kSplit, one);
  CHECK(step.kind == Kind::same_nodes);
  CHECK(step.warnings == std::vector<std::string>{"every node of the attempt passed its probe: the application "
                                                  "failed, not a node; --retries runs it again on the same nodes"});
  step = next_failover_step(state, verdict(VerdictKind::application), {}, false, kSplit, one);
  CHECK(step.kind == Kind::stop);
  CHECK(step.warnings == std::vector<std::string>{"every node of the attempt passed its probe: the application "
                                                  "failed, not a node"});
  CHECK_FALSE(step.sign_after);
}

TEST_CASE("failover policy: bad nodes are swapped for spares, a line each, until none is left", "[failover_policy]") {
  FailoverState state;
  auto step = next_failover_step(state, verdict(VerdictKind::bad_nodes, {{"n3", "its shim vanished", {}}}), {}, false,
                                 kSplit, {});
  REQUIRE(step.kind == Kind::swap);
  CHECK(step.split.active == HostList{"n1", "n2", "n5", "n4"});
  CHECK(step.split.spare == HostList{"n6"});
  CHECK(step.warnings == std::vector<std::string>{swap_line({"n3", "its shim vanished", {}}, "n5", 1)});
  CHECK(state.swaps == 1);
  // Two at once with one spare left: none is swapped, and the step says why.
  step = next_failover_step(state, verdict(VerdictKind::bad_nodes, {{"n1", "a", {}}, {"n2", "b", {}}}), {}, false,
                            step.split, {});
  CHECK(step.kind == Kind::stop);
  CHECK_THAT(step.warnings[0], Catch::StartsWith("no spare node left for 2 failed nodes: n1 (a); n2 (b)"));
  // --max-failover-retries 1: the second swap is refused.
  FailoverState limited;
  const FailoverLimits max1{.retries = 0, .max_swaps = 1};
  REQUIRE(
      next_failover_step(limited, verdict(VerdictKind::bad_nodes, {{"n1", "a", {}}}), {}, false, kSplit, max1).kind ==
      Kind::swap);
  step = next_failover_step(limited, verdict(VerdictKind::bad_nodes, {{"n2", "b", {}}}), {}, false, kSplit, max1);
  CHECK(step.kind == Kind::stop);
  CHECK(step.warnings == std::vector<std::string>{"--max-failover-retries 1 reached: not swapping 1 node again"});
}

TEST_CASE("failover policy: two attempts in a row that said nothing stop the loop", "[failover_policy]") {
  FailoverState state;
  const FailoverLimits many{.retries = 5, .max_swaps = std::nullopt};
  CHECK(next_failover_step(state, verdict(VerdictKind::application), {}, true, kSplit, many).kind == Kind::same_nodes);
  auto step = next_failover_step(state, verdict(VerdictKind::bad_nodes, {{"n2", "gone", {}}}), {}, true, kSplit, many);
  CHECK(step.kind == Kind::stop);
  REQUIRE(step.warnings.size() == 2);  // the swap said, then why no attempt follows
  CHECK(step.warnings[1] == "two attempts in a row failed before any rank printed a line: not trying again");
  // An attempt that printed a line in between starts the count again.
  FailoverState reset;
  (void)next_failover_step(reset, verdict(VerdictKind::application), {}, true, kSplit, many);
  (void)next_failover_step(reset, verdict(VerdictKind::application), {}, false, kSplit, many);
  CHECK(next_failover_step(reset, verdict(VerdictKind::application), {}, true, kSplit, many).kind == Kind::same_nodes);
}
