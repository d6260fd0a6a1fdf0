#include <catch2/catch.hpp>

#include <algorithm>

#include "core/yeet/manifest.hpp"
#include "core/yeet/node_plan.hpp"
#include "core/yeet/relay_args.hpp"

using namespace ezpz::core;

namespace {

NodeResult result(const std::string& host, NodeOutcome outcome, std::string error = {}) {
  NodeResult r;
  r.host = host;
  r.outcome = outcome;
  r.error = std::move(error);
  return r;
}

BroadcastPlan plan_for(HostList targets, Strategy strategy = Strategy::tree, SuccessRule rule = {}) {
  BroadcastSpec spec;
  spec.destination = "/tmp/env";
  auto plan = plan_broadcast(std::move(targets), 2, strategy, rule, spec);
  REQUIRE(plan);
  return *plan;
}

}  // namespace

TEST_CASE("plan_broadcast: tree, totals, transport, bad thresholds and names refused", "[yeet_broadcast]") {
  auto plan = plan_for({"n1", "n2", "n3", "n4", "n5"});
  CHECK(plan.total_nodes == 6);
  CHECK(encode_tree(plan.tree) == "n1(n3,n4),n2(n5)");
  CHECK(plan.transport() == "built-in libssh");
  plan.spec.reach.ssh_command = {"ssh", "-o", "BatchMode=yes"};
  CHECK(plan.transport() == "ssh command: ssh -o BatchMode=yes");
  SuccessRule both;
  both.min_nodes = 1;
  both.min_fraction = 0.5;
  auto refused = plan_broadcast({"n1"}, 2, Strategy::tree, both, {});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ezpz::ExitCode::usage);
  CHECK_FALSE(plan_broadcast({"-oProxyCommand=x"}, 2, Strategy::tree, {}, {}));
  CHECK(plan_for({}).total_nodes == 1);
}

TEST_CASE("plan_repair: orphans and nodes that need a full copy, from the first peer that has it", "[yeet_broadcast]") {
  const auto plan = plan_for({"n1", "n2", "n3", "n4"});
  std::vector<NodeResult> results = {
      result("n1", NodeOutcome::failed, "ssh: refused"),
      result("n2", NodeOutcome::ok),
      result("n3", NodeOutcome::orphaned, "no report: its parent relay n1 failed"),
      result("n4", NodeOutcome::needs_full_copy, std::string(kNeedsFullCopy) + "it missed the last yeet"),
  };
  auto repair = plan_repair(results, plan, "head", false);
  CHECK(repair.hosts == HostList{"n3", "n4"});  // a failed node is not repaired: it failed itself
  CHECK(repair.from == "n2");
  CHECK(repair.from_peer);
  CHECK(encode_tree(repair.tree) == "n3,n4");
  REQUIRE(repair.full_copies.size() == 1);
  CHECK(repair.full_copies[0] == std::pair<std::string, std::string>{"n4", "it missed the last yeet"});

  SECTION("no peer has it: the head sends") {
    results[1].outcome = NodeOutcome::failed;
    auto from_head = plan_repair(results, plan, "head", false);
    CHECK(from_head.from == "head");
    CHECK_FALSE(from_head.from_peer);
    CHECK(from_head.hosts.size() == 2);
  }
  SECTION("interrupted or greedy: nothing is repaired, the full copies are still listed") {
    CHECK(plan_repair(results, plan, "head", true).empty());
    auto greedy = plan_repair(results, plan_for({"n1", "n2", "n3", "n4"}, Strategy::greedy), "head", false);
    CHECK(greedy.empty());
    CHECK(greedy.full_copies.size() == 1);
  }
  SECTION("apply_repair: repaired ones count as having the copy; one that failed again does not") {
    std::vector<NodeResult> again = {result("n3", NodeOutcome::ok), result("n4", NodeOutcome::failed, "disk full")};
    apply_repair(results, again, repair);
    CHECK(results[2].outcome == NodeOutcome::repaired);
    CHECK(results[2].repaired_from == "n2");
    CHECK(results[2].ok());
    CHECK(results[3].outcome == NodeOutcome::failed);
    CHECK(results[3].error == "disk full");
    const auto t = tally(results, plan);
    CHECK(t.succeeded == 3);  // head, n2, n3
    CHECK(t.failed == std::vector<std::string>{"n1", "n4"});
    CHECK_FALSE(t.threshold_met);
  }
}

TEST_CASE("tally: thresholds by nodes and by fraction, this node included", "[yeet_broadcast]") {
  std::vector<NodeResult> results = {result("n1", NodeOutcome::ok), result("n2", NodeOutcome::failed),
                                     result("n3", NodeOutcome::orphaned)};
  CHECK_FALSE(tally(results, plan_for({"n1", "n2", "n3"})).threshold_met);
  SuccessRule two;
  two.min_nodes = 2;
  auto t = tally(results, plan_for({"n1", "n2", "n3"}, Strategy::tree, two));
  CHECK(t.succeeded == 2);
  CHECK(t.threshold_met);
  SuccessRule most;
  most.min_fraction = 0.75;
  CHECK_FALSE(tally(results, plan_for({"n1", "n2", "n3"}, Strategy::tree, most)).threshold_met);
}

TEST_CASE("relay arguments: one table builds the argv and parses it back", "[yeet_broadcast]") {
  BroadcastSpec spec;
  spec.destination = "/tmp/my env";
  spec.reach.ssh_command = {"ssh", "-o", "BatchMode=yes"};
  spec.reach.self_exe = "/home/u/bin/ezpz";
  spec.reach.exe_digest = "ab12";
  spec.reach.exe_size = 123456789012ULL;
  spec.reach.accept_new_host_keys = true;
  spec.reattach = false;
  spec.force = true;
  spec.stall_timeout_s = 30;
  spec.reach.user = "alice";
  auto args = passed_down(spec);
  args.host = "n1";
  args.children = "n2(n3),n4";
  const auto argv = to_argv(args);
  auto back = parse_relay_args(argv);
  REQUIRE(back);
  CHECK(back->host == "n1");
  CHECK(back->children == "n2(n3),n4");
  CHECK(back->stall_timeout_s == 28);
  CHECK(back->parent_silence_s == 40);
  const auto again = spec_from(*back, "/other/ezpz");
  CHECK(again.destination == spec.destination);
  CHECK(again.reach.ssh_command == spec.reach.ssh_command);
  CHECK(again.reach.self_exe == spec.reach.self_exe);
  CHECK(again.reach.exe_digest == spec.reach.exe_digest);
  CHECK(again.reach.exe_size == spec.reach.exe_size);
  CHECK(again.reach.accept_new_host_keys);
  CHECK_FALSE(again.reattach);
  CHECK(again.force);  // every node applies the head's --force, and only then
  CHECK_FALSE(spec_from(*parse_relay_args({"--dst", "/tmp/x"}), "/self").force);
  CHECK(again.reach.user == "alice");
  // Every flag of the table is one the parser takes, and nothing else is.
  for (const auto& flag : relay_flags()) {
    CHECK(std::string(flag.name).rfind("--", 0) == 0);
  }
  CHECK_FALSE(parse_relay_args({"--dst", "/tmp/x", "--bogus"}));
  CHECK_FALSE(parse_relay_args({"--dst"}));
  CHECK_FALSE(parse_relay_args({"--dst", "/tmp/x", "--exe-size", "12x"}));
  CHECK_FALSE(parse_relay_args({"--host", "n1"}));  // --dst is required
  CHECK(spec_from(*parse_relay_args({"--dst", "/tmp/x"}), "/self").reach.self_exe == "/self");
  // The head's -v goes down the tree; without it the relays' argv does not name a level.
  CHECK(again.log_level.empty());
  CHECK(std::find(argv.begin(), argv.end(), "--log-level") == argv.end());
  spec.log_level = "debug";
  auto loud = passed_down(spec);
  loud.host = "n1";
  CHECK(spec_from(*parse_relay_args(to_argv(loud)), "/self").log_level == "debug");
  CHECK_FALSE(parse_relay_args({"--dst", "/tmp/x", "--log-level", "loud"}));
}

TEST_CASE("relay argv keeps one shape: --host H --children C --dst D ... even for a leaf", "[yeet_broadcast]") {
  BroadcastSpec spec;
  spec.destination = "/tmp/d";
  const auto leaf = relay_args(spec, RelayNode{"n4", {}});
  // What tools (and the fault tests) match: the flags in this order, --children present though empty.
  REQUIRE(leaf.size() >= 7);
  CHECK(std::vector<std::string>(leaf.begin(), leaf.begin() + 7) ==
        std::vector<std::string>{"__yeet-relay", "--host", "n4", "--children", "", "--dst", "/tmp/d"});
  CHECK(std::find(leaf.begin(), leaf.end(), "--ssh-command") != leaf.end());
  auto back = parse_relay_args(std::vector<std::string>(leaf.begin() + 1, leaf.end()));
  REQUIRE(back);
  CHECK(back->children.empty());
}
