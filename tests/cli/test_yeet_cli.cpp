// yeet and tar-env through the CLI against fakes of their ports: thresholds, repair from a
// peer, orphaned subtrees, nodes that need a full copy, signals; no root, no nodes.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "cli/cli_fixture.hpp"
#include "cli/fake_transfer.hpp"

using namespace ezpz;
using namespace ezpz::test;

namespace {

core::NodeResult outcome(const std::string& host, core::NodeOutcome o, std::string error) {
  core::NodeResult r;
  r.host = host;
  r.outcome = o;
  r.error = std::move(error);
  return r;
}

struct YeetWorld {
  FakeProbe probe;
  FakeTrees trees;
  FakeStaging staging;
  FakeArchives archives;
  FakeManifests manifests;
  FakeBroadcaster broadcaster;
  core::Env env = make_env({{"PWD", "/home/u"}, {"USER", "u"}}, "head");
  YeetWorld() { probe.files["/home/u/hosts"] = "head\nn1\nn2\nn3\nn4\n"; }

  CliRun yeet(std::vector<std::string> extra) {
    std::vector<std::string> args = {"yeet",       "/home/u/venv",  "--dst",    "/tmp/venv",
                                     "--hostfile", "/home/u/hosts", "--no-hsn", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const cli::Ports ports{&probe,   nullptr,   nullptr,    nullptr,      nullptr, &trees,
                           &staging, &archives, &manifests, &broadcaster, nullptr};
    return run_cli_ports(args, env, ports);
  }
};

nlohmann::json remote_of(const nlohmann::json& j, const std::string& host) {
  for (const auto& r : j["remote"]) {
    if (r["host"] == host) {
      return r;
    }
  }
  FAIL("no result for " << host);
  return {};
}

}  // namespace

TEST_CASE("yeet: every node has the copy, the plan's tree, one pass, no repair", "[cli][yeet]") {
  YeetWorld w;
  auto run = w.yeet({});
  INFO(run.err);
  REQUIRE(run.rc == 0);
  auto j = nlohmann::json::parse(run.out);
  CHECK(j["ok"] == true);
  CHECK(j["relay_tree"] == "n1(n3,n4),n2");
  CHECK(j["transport"] == "built-in libssh");
  CHECK(j["succeeded"] == 5);
  CHECK(j["incremental"]["mode"] == "full");
  REQUIRE(w.broadcaster.calls.size() == 1);
  CHECK(w.broadcaster.calls[0].from == "/tmp/venv");  // the committed copy, not a delta
  CHECK(w.staging.committed == std::vector<std::string>{"/tmp/venv.ezpz-tmp-1 -> /tmp/venv"});
  CHECK(remote_of(j, "n3")["outcome"] == "ok");
}

TEST_CASE("yeet: a failed relay's subtree is repaired from a peer that has the copy", "[cli][yeet]") {
  YeetWorld w;
  w.broadcaster.first["n1"] = outcome("n1", core::NodeOutcome::failed, "ssh: connection refused");
  w.broadcaster.first["n3"] = outcome("n3", core::NodeOutcome::orphaned, "no report: its parent relay n1 failed");
  w.broadcaster.first["n4"] = outcome("n4", core::NodeOutcome::orphaned, "no report: its parent relay n1 failed");
  auto run = w.yeet({});
  REQUIRE(w.broadcaster.calls.size() == 2);
  CHECK(w.broadcaster.calls[1].kind == "peer");
  CHECK(w.broadcaster.calls[1].from == "n2");  // the first node that has it, not the head
  CHECK(w.broadcaster.calls[1].tree == "n3,n4");
  auto j = nlohmann::json::parse(run.out);
  CHECK(remote_of(j, "n3")["outcome"] == "repaired");
  CHECK(remote_of(j, "n3")["repaired_from"] == "n2");
  CHECK(remote_of(j, "n1")["outcome"] == "failed");
  // n1 itself failed: every node must succeed by default, so the run fails.
  CHECK(run.rc == 1);
  CHECK(j["ok"] == false);
  CHECK(j["failed"] == nlohmann::json::array({"n1"}));
  CHECK(j["succeeded"] == 4);
  CHECK(w.probe.written.empty());  // no failed-nodes file below the threshold
}

TEST_CASE("yeet: the threshold decides, the failed nodes are listed beside the copy when it holds", "[cli][yeet]") {
  YeetWorld w;
  w.broadcaster.first["n2"] = outcome("n2", core::NodeOutcome::failed, "No space left on device");
  SECTION("--min-success-nodes 4 of 5") {
    auto run = w.yeet({"--min-success-nodes", "4"});
    CHECK(run.rc == 0);
    auto j = nlohmann::json::parse(run.out);
    CHECK(j["threshold_met"] == true);
    CHECK(w.probe.written["/tmp/venv/.ezpz-yeet-failed-nodes.txt"] == "n2\n");
  }
  SECTION("--min-success-fraction 0.9 is not met") {
    auto run = w.yeet({"--min-success-fraction", "0.9"});
    CHECK(run.rc == 1);
    CHECK(nlohmann::json::parse(run.out)["threshold_met"] == false);
    CHECK(w.probe.written.empty());
  }
  SECTION("a bad threshold is a usage error before the hostfile is read") {
    w.probe.files.erase("/home/u/hosts");
    CHECK(w.yeet({"--min-success-nodes", "0"}).rc == 2);
  }
  SECTION("both thresholds: a usage error before anything is copied") {
    auto run = w.yeet({"--min-success-nodes", "4", "--min-success-fraction", "0.5"});
    CHECK(run.rc == 2);
    CHECK(w.staging.committed.empty());
    CHECK(w.broadcaster.calls.empty());
  }
}

TEST_CASE("yeet: nodes the delta cannot update get everything, with no peer, from the head", "[cli][yeet]") {
  YeetWorld w;
  w.manifests.held = true;  // this node holds its last copy: the others get a delta
  for (const auto* host : {"n1", "n2", "n3", "n4"}) {
    w.broadcaster.first[host] = outcome(host, core::NodeOutcome::needs_full_copy,
                                        std::string(core::kNeedsFullCopy) + "it missed the last yeet");
  }
  auto run = w.yeet({});
  INFO(run.err);
  CHECK(run.rc == 0);
  REQUIRE(w.broadcaster.calls.size() == 2);
  CHECK(w.broadcaster.calls[0].from == "/tmp/venv.ezpz-tmp-1.delta");  // the bundle went first
  CHECK(w.broadcaster.calls[1].kind == "broadcast");                   // no peer has it: the head
  CHECK(w.broadcaster.calls[1].from == "/tmp/venv");
  CHECK(w.broadcaster.calls[1].tree == "n1(n4,n2),n3");  // in the order the results came
  auto j = nlohmann::json::parse(run.out);
  CHECK(j["incremental"]["mode"] == "delta");
  CHECK(j["incremental"]["full_copies"].size() == 4);
  CHECK(j["incremental"]["full_copies"][0]["why"] == "it missed the last yeet");
  CHECK(remote_of(j, "n4")["repaired_from"] == "head");
  CHECK(std::find(w.staging.discarded.begin(), w.staging.discarded.end(), "/tmp/venv.ezpz-tmp-1.delta") !=
        w.staging.discarded.end());
}

TEST_CASE("yeet: a signal during the pass ends with 128+N and no repair", "[cli][yeet]") {
  YeetWorld w;
  w.broadcaster.first["n3"] = outcome("n3", core::NodeOutcome::orphaned, "no report: its parent relay n1 failed");
  w.broadcaster.stop_after_pass = &w.staging;
  auto run = w.yeet({});
  CHECK(run.rc == 143);
  CHECK(w.broadcaster.calls.size() == 1);
  CHECK(run.err.find("interrupted") != std::string::npos);
}

TEST_CASE("yeet: --strategy greedy pushes and never repairs, --dry-run copies nothing", "[cli][yeet]") {
  YeetWorld w;
  w.broadcaster.first["n2"] = outcome("n2", core::NodeOutcome::failed, "push failed");
  auto greedy = w.yeet({"--strategy", "greedy", "--min-success-nodes", "1"});
  CHECK(greedy.rc == 0);
  REQUIRE(w.broadcaster.calls.size() == 1);
  CHECK(w.broadcaster.calls[0].kind == "greedy");
  CHECK(nlohmann::json::parse(greedy.out)["strategy"] == "greedy");

  YeetWorld dry;
  dry.manifests.held = true;
  auto run = dry.yeet({"--dry-run"});
  CHECK(run.rc == 0);
  auto j = nlohmann::json::parse(run.out);
  CHECK(j["dry_run"] == true);
  CHECK(j["incremental"]["estimate"]["files"] == 2);
  CHECK(dry.staging.committed.empty());
  CHECK(dry.broadcaster.calls.empty());
}

TEST_CASE("tar-env: packs beside the output and renames it in, a failed pack leaves nothing", "[cli][tar-env]") {
  FakeProbe probe;
  FakeTrees trees;
  FakeStaging staging;
  FakeArchives archives;
  auto env = make_env({{"PWD", "/home/u"}}, "head");
  const cli::Ports ports{&probe,   nullptr,   nullptr, nullptr, nullptr, &trees,
                         &staging, &archives, nullptr, nullptr, nullptr};
  SECTION("packed") {
    auto run = run_cli_ports({"tar-env", "/home/u/venv", "--json"}, env, ports);
    INFO(run.err);
    CHECK(run.rc == 0);
    CHECK(staging.renamed.size() == 1);
    CHECK(archives.checksums == std::vector<std::string>{"/home/u/venv.tar.zst"});
  }
  SECTION("the pack fails: its work is discarded, nothing renamed, OUT named unchanged") {
    archives.pack_fails = true;
    auto run = run_cli_ports({"tar-env", "/home/u/venv", "--json"}, env, ports);
    CHECK(run.rc == 1);
    CHECK(staging.renamed.empty());
    CHECK(archives.checksums.empty());
    CHECK_FALSE(staging.discarded.empty());
    auto j = nlohmann::json::parse(run.out);
    CHECK(j["ok"] == false);
    CHECK(j["unchanged"] == nlohmann::json::array({"/home/u/venv.tar.zst"}));
  }
  SECTION("a signal while packing: 128+N") {
    archives.pack_fails = true;
    staging.signal = 1;
    CHECK(run_cli_ports({"tar-env", "/home/u/venv"}, env, ports).rc == 129);
  }
}

TEST_CASE("command table: rows name their ports, modes ezpz starts itself are raw rows", "[cli][registry]") {
  for (const char* mode :
       {"__rank-env", "__yeet-relay", "__yeet-send", "__ssh-stdio", "__ssh-tcp", "__self-digest", "__yeet-janitor"}) {
    const auto* row = cli::find_command(mode);
    REQUIRE(row != nullptr);
    CHECK(row->hidden);
    CHECK(row->raw);
  }
  CHECK(cli::find_command("__ssh-stdio")->needs == cli::kTransport);
  CHECK((cli::find_command("yeet")->needs & cli::kBroadcast) != 0);
  CHECK((cli::find_command("kill")->needs & cli::kProcesses) != 0);
  CHECK(cli::find_command("completions")->needs == cli::kNoPorts);
  CHECK(cli::find_command("no-such-command") == nullptr);
  // A command runs with only what its row names: completions with no ports at all; a port the
  // row does not name is refused (an internal error, never a silent use).
  auto env = make_env({}, "head");
  const cli::Ports none{};
  CHECK(run_cli_ports({"completions", "bash"}, env, none).rc == 0);
  auto refused = run_cli_ports({"plot", "/tmp/metrics.jsonl"}, env, none);
  CHECK(refused.rc == 125);
  CHECK(refused.err.find("does not name the port probe") != std::string::npos);
}

TEST_CASE("relay rows parse their flags from the one table, anything else is a usage error", "[cli][registry]") {
  FakeBroadcaster broadcaster;
  FakeTrees trees;  // a relay installs through the head's ports (core::NodeInstall)
  FakeStaging staging;
  FakeManifests manifests;
  const cli::Ports ports{.trees = &trees, .staging = &staging, .manifests = &manifests, .broadcaster = &broadcaster};
  auto env = make_env({}, "n1");
  CHECK(run_cli_ports({"__yeet-relay", "--dst", "/tmp/x", "--bogus"}, env, ports).rc == 2);
  CHECK(run_cli_ports({"__yeet-relay", "--dst", "/tmp/x"}, env, ports).rc == 2);  // --host missing
  auto bad_tree = run_cli_ports({"__yeet-relay", "--dst", "/tmp/x", "--host", "n1", "--children", "a(("}, env, ports);
  CHECK(bad_tree.rc != 0);
  // A well-formed relay line reaches the broadcaster (the fake's relay answers 1).
  CHECK(run_cli_ports({"__yeet-relay", "--dst", "/tmp/x", "--host", "n1", "--children", "n2"}, env, ports).rc == 1);
  auto help = run_cli_ports({"__yeet-relay", "--help"}, env, ports);  // the parsed path: the table's flags
  CHECK(help.rc == 0);
  CHECK(help.out.find("--parent-silence") != std::string::npos);
}
