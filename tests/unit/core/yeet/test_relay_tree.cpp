#include <catch2/catch.hpp>

#include <algorithm>

#include "core/reach/spec.hpp"
#include "core/reach/targets.hpp"
#include "core/yeet/broadcast_spec.hpp"
#include "core/yeet/outcome.hpp"
#include "core/yeet/relay_args.hpp"
#include "core/yeet/relay_tree.hpp"
#include "core/yeet/stream_wire.hpp"
#include "fake_probe.hpp"
#include "unit/core/base/sh_words.hpp"

using namespace ezpz::core;

TEST_CASE("yeet targets: dedupe by short name, skip this node, prefer -hsn0 names", "[broadcast]") {
  ezpz::test::FakeProbe probe;
  HostList hosts = {"x1.a.b", "x2.a.b", "x1", "me.a.b", "x3", "localhost"};
  CHECK(reach_targets(hosts, "me", HsnNames::never, probe) == HostList{"x1.a.b", "x2.a.b", "x3"});
  probe.resolvable.insert("x2-hsn0");
  CHECK(reach_targets(hosts, "me.a.b", HsnNames::prefer, probe) == HostList{"x1.a.b", "x2-hsn0", "x3"});
  CHECK(reach_targets(hosts, "me.a.b", HsnNames::never, probe) == HostList{"x1.a.b", "x2.a.b", "x3"});
  // DNS that does not answer costs one bounded wait, not one per host.
  probe.looked_up.clear();
  probe.lookup_seconds["x1-hsn0"] = 60;
  CHECK(reach_targets(hosts, "me.a.b", HsnNames::prefer, probe) == HostList{"x1.a.b", "x2.a.b", "x3"});
  CHECK(probe.looked_up == std::vector<std::string>{"x1-hsn0"});
}

TEST_CASE("relay tree is breadth first with fanout k", "[broadcast]") {
  HostList t = {"n1", "n2", "n3", "n4", "n5", "n6", "n7"};
  auto tree = relay_tree(t, 2);
  CHECK(encode_tree(tree) == "n1(n3(n7),n4),n2(n5,n6)");
  CHECK(encode_tree(relay_tree(t, 8)) == "n1,n2,n3,n4,n5,n6,n7");
  CHECK(encode_tree(relay_tree(t, 1)) == "n1(n2(n3(n4(n5(n6(n7))))))");
  CHECK(relay_tree({}, 4).empty());
  CHECK(subtree_hosts(tree[0]) == HostList{"n1", "n3", "n7", "n4"});
  // Every host appears exactly once, whatever the fanout.
  HostList many;
  for (int i = 0; i < 100; ++i) {
    many.push_back("h" + std::to_string(i));
  }
  for (int k : {1, 2, 3, 4, 8, 16}) {
    HostList all;
    for (const auto& n : relay_tree(many, k)) {
      auto s = subtree_hosts(n);
      all.insert(all.end(), s.begin(), s.end());
    }
    std::sort(all.begin(), all.end());
    auto sorted = many;
    std::sort(sorted.begin(), sorted.end());
    CHECK(all == sorted);
  }
}

TEST_CASE("relay tree encoding round-trips and rejects malformed text", "[broadcast]") {
  auto tree = relay_tree({"a", "b", "c", "d", "e"}, 2);
  auto back = decode_tree(encode_tree(tree));
  REQUIRE(back);
  CHECK(*back == tree);
  CHECK(decode_tree("")->empty());
  CHECK_FALSE(decode_tree("a(b"));
  CHECK_FALSE(decode_tree("a)"));
  CHECK_FALSE(decode_tree("a(,b)"));
}

TEST_CASE("frames and results", "[broadcast]") {
  auto h = frame_header(0x01020304);
  CHECK(frame_length(h.data()) == 0x01020304U);
  CHECK(frame_length(frame_header(0).data()) == 0);
  NodeResult r{"node 1", NodeOutcome::ok, 1.5, 1234, true, ""};
  auto back = decode_result(encode_result(r));
  REQUIRE(back);
  CHECK(back->host == "node 1");
  CHECK(back->ok());
  for (auto o : {NodeOutcome::ok, NodeOutcome::repaired, NodeOutcome::failed, NodeOutcome::needs_full_copy,
                 NodeOutcome::orphaned}) {
    r.outcome = o;
    auto again = decode_result(encode_result(r));
    REQUIRE(again);
    CHECK(again->outcome == o);
  }
  // An older relay's line (no "outcome") says ok or not; an outcome that contradicts "ok" is no result.
  CHECK(decode_result(R"({"host":"n1","ok":true})")->outcome == NodeOutcome::ok);
  CHECK(decode_result(R"({"host":"n1","ok":false})")->outcome == NodeOutcome::failed);
  CHECK_FALSE(decode_result(R"({"host":"n1","ok":true,"outcome":"orphaned"})"));
  CHECK_FALSE(decode_result(R"({"host":"n1","ok":false,"outcome":"sideways"})"));
  CHECK(back->bytes == 1234);
  CHECK_FALSE(decode_result("ssh: connect to host x port 22: refused"));
  // A relay's steps travel with its result, in order; an older relay's line has none, and a
  // malformed step is left out, never the result.
  r.steps = {{"open_s", 0.25}, {"stream_s", 1.5}, {"clone_s", 0.125}};
  CHECK(decode_result(encode_result(r))->steps == r.steps);
  CHECK(decode_result(R"({"host":"n1","ok":true})")->steps.empty());
  CHECK(decode_result(R"({"host":"n1","ok":true,"steps":[["a_s",1],["b_s"],[2,"c"],"x"]})")->steps ==
        StepTimes{{"a_s", 1.0}});
}

TEST_CASE("result lines of the wrong types are not results, never exceptions (fuzz finding)", "[broadcast]") {
  // nlohmann's value() threw type_error on these, and converted 1e300 to an integer (UB).
  for (const char* line :
       {R"({"host":"n1","ok":"yes"})", R"({"host":"n1","bytes":-1})", R"({"host":"n1","bytes":1e300})",
        R"({"host":"n1","bytes":1.5})", R"({"host":"n1","seconds":"1"})", R"({"host":"n1","error":7})",
        R"({"host":"n1","digest_ok":1})", R"({"host":"n1","reattached_to":null})"}) {
    INFO(line);
    CHECK_NOTHROW(decode_result(line));
    CHECK_FALSE(decode_result(line));
  }
  auto r = decode_result(R"({"host":"n1","ok":true,"bytes":18446744073709551615,"seconds":2})");
  REQUIRE(r);
  CHECK(r->bytes == 18446744073709551615ULL);
  CHECK(r->seconds == 2.0);
}

TEST_CASE("success thresholds as in ezpz", "[broadcast]") {
  CHECK(success({}, 9, 9));
  CHECK_FALSE(success({}, 8, 9));
  CHECK(success({8, std::nullopt}, 8, 9));
  CHECK_FALSE(success({9, std::nullopt}, 8, 9));
  CHECK(success({std::nullopt, 0.8}, 8, 10));
  CHECK_FALSE(success({std::nullopt, 0.95}, 8, 9));
  CHECK(success({std::nullopt, 1.0}, 9, 9));
  CHECK_FALSE(check_success_rule({0, std::nullopt}));
  CHECK_FALSE(check_success_rule({std::nullopt, 1.5}));
  CHECK_FALSE(check_success_rule({std::nullopt, 0.0}));
  CHECK_FALSE(check_success_rule({2, 0.5}));
  CHECK(check_success_rule({2, std::nullopt}));
}

namespace {
bool has_flag(const std::vector<std::string>& args, const std::string& flag) {
  return std::find(args.begin(), args.end(), flag) != args.end();
}
}  // namespace

TEST_CASE("remote start command: every word reaches the remote shell as data (as /bin/sh reads it)", "[broadcast]") {
  BroadcastSpec spec;
  spec.destination = "/tmp/my env;$(touch /tmp/pwned)";
  spec.reach.self_exe = "/home/a b/it's/ezpz";
  spec.reach.exe_digest = std::string(64, 'a');
  spec.reach.exe_size = 4096;
  spec.reach.accept_new_host_keys = true;
  const RelayNode node{"node`id`1", {RelayNode{"node2", {}}}};
  const auto args = relay_args(spec, node);
  const auto words = ezpz::test::sh_words(remote_command(spec.reach, args, ezpz::core::Ship::when_missing));
  REQUIRE(words.size() == 8 + args.size());
  CHECK(words[0] == "sh");
  CHECK(words[1] == "-c");
  CHECK(words[2].find("__self-digest") != std::string::npos);  // the candidate says its digest
  CHECK(words[2].find("sha256sum") != std::string::npos);      // a shipped copy is checked before it runs
  CHECK(words[4] == spec.reach.self_exe);
  CHECK(words[5] == spec.reach.exe_digest);
  CHECK(words[6] == "4096");
  CHECK(words[7] == "1");
  CHECK(std::vector<std::string>(words.begin() + 8, words.end()) == args);
  // The relay learns everything it needs to pass on.
  auto has = [&](const std::string& flag, const std::string& value) {
    auto it = std::find(args.begin(), args.end(), flag);
    return it != args.end() && (value.empty() || (it + 1 != args.end() && *(it + 1) == value));
  };
  CHECK(args[0] == "__yeet-relay");
  CHECK(has("--host", "node`id`1"));
  CHECK(has("--children", "node2"));
  CHECK(has("--dst", spec.destination));
  CHECK(has("--exe-digest", spec.reach.exe_digest));
  CHECK(has("--accept-new-host-keys", ""));
  CHECK(has("--ssh-command", ""));  // empty: the built-in transport
  CHECK_FALSE(has("--no-reattach", ""));
  // Stall timeouts shrink per level; the silence a relay allows its parent is the head's
  // stall timeout + 10 s at every level (the first bytes wait for the head's children).
  spec.stall_timeout_s = 30;
  CHECK(has("--stall-timeout", ""));
  CHECK(std::stod(*(std::find(args.begin(), args.end(), "--stall-timeout") + 1)) == 28);
  auto silence = [&](const BroadcastSpec& s) {
    const auto a = relay_args(s, node);
    const auto it = std::find(a.begin(), a.end(), "--parent-silence");
    REQUIRE(it != a.end());
    REQUIRE(it + 1 != a.end());
    return std::stod(*(it + 1));
  };
  CHECK(silence(spec) == 40);
  BroadcastSpec level1 = spec;  // what a relay one level down has
  level1.stall_timeout_s = 28;
  level1.parent_silence_s = 40;
  CHECK(silence(level1) == 40);
  level1.stall_timeout_s = 45;  // never less than its own stall timeout + 10 s
  CHECK(silence(level1) == 55);
  spec.reattach = false;
  CHECK(has_flag(relay_args(spec, node), "--no-reattach"));
  // A sender (greedy push, repair) never asks for the binary: the node ran a relay before.
  const auto send = send_args(spec, {node});
  CHECK(send[0] == "__yeet-send");
  CHECK(ezpz::test::sh_words(remote_command(spec.reach, send, ezpz::core::Ship::never))[7] == "0");
}
