// What no spare can fix, read from a failed attempt's last words (golden lines from real logs:
// the Python ezpz's fault-injection table and its Aurora log survey): storage errors retried in
// place, systemic start-up failures named and never evicted on, and the verdicts they give.
#include <catch2/catch.hpp>

#include "core/launch/failover.hpp"
#include "core/launch/failure_signs.hpp"

using namespace ezpz::core;
using Strings = std::vector<std::string>;

namespace {

RankExit failed(int rank, const std::string& host, double at, Strings lines, int code = 1) {
  RankExit e;
  e.rank = rank;
  e.host = host;
  e.exit_code = code;
  e.time = at;
  e.program = "python3";
  e.last_lines = std::move(lines);
  return e;
}

}  // namespace

TEST_CASE("storage: ENOSPC and EDQUOT of the first failed rank, not configuration errors", "[failure_signs]") {
  const auto enospc =
      classify_failure({failed(3, "x4102c0s1b0n0", 20,
                               {"Traceback (most recent call last):",
                                "OSError: [Errno 28] No space left on device: '/lus/flare/ckpt/step_100.pt'"}),
                        failed(0, "x4102c0s0b0n0", 25, {"RuntimeError: collective timed out"})},
                       {}, 24);
  CHECK(enospc.kind == FailureClass::storage);
  CHECK(enospc.what == "No space left on device");
  REQUIRE(enospc.lines.size() == 1);
  CHECK_THAT(enospc.lines[0], Catch::StartsWith("rank 3 on x4102c0s1b0n0: OSError: [Errno 28]"));
  CHECK_THAT(enospc.remedy, Catch::Contains("lfs df"));
  CHECK(classify_failure({failed(1, "n", 1, {"OSError: [Errno 122] Disk quota exceeded"})}, {}, 4).kind ==
        FailureClass::storage);
  for (const auto* config : {"PermissionError: [Errno 13] Permission denied: '/lus/x'",
                             "OSError: [Errno 30] Read-only file system: '/soft/x'",
                             "FileNotFoundError: [Errno 2] No such file or directory: 'data.bin'"}) {
    CHECK(classify_failure({failed(1, "n", 1, {config})}, {}, 4).kind == FailureClass::other);
  }
  // (the first to fail decides: a later rank's ENOSPC is the cascade's)
  CHECK(classify_failure({failed(0, "a", 1, {"ValueError: bad batch"}), failed(1, "b", 2, {"[Errno 28] x"})}, {}, 4)
            .kind == FailureClass::other);
}

TEST_CASE("systemic: every rank failed with one start-up sign, or the launcher's with none ended well",
          "[failure_signs]") {
  std::vector<RankExit> kvs;
  for (int r = 0; r < 4; ++r) {
    kvs.push_back(failed(r, "node" + std::to_string(r), 10 + r,
                         {"2026:06:30-10:01:02:(12345) |CCL_ERROR| atl_pmi.cpp:156 kvs_get_value: timeout"}));
  }
  const auto s = classify_failure(kvs, {}, 4);
  CHECK(s.kind == FailureClass::systemic);
  CHECK(s.what == "PMI/CCL KVS timeout");
  CHECK(s.lines.size() == 3);  // a few, not every rank's
  CHECK_THAT(s.remedy, Catch::Contains("PMI_MMAP_SYNC_WAIT_TIME") && Catch::Contains("ezpz yeet"));
  // One rank fewer failed: not every rank: for the probes to decide.
  CHECK(classify_failure({kvs.begin(), kvs.end() - 1}, {}, 4).kind == FailureClass::other);
  // Two different signs: not the same way.
  auto mixed = kvs;
  mixed[2].last_lines = {"torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError"};
  CHECK(classify_failure(mixed, {}, 4).kind == FailureClass::other);
  // PALS could not forward its launch: the launcher's words, no rank ended well.
  const auto pals = classify_failure(
      {}, {"launch failed on x4102c0s0b0n0: Couldn't forward RPC launch(7c1a) to child x4102c0s5b0n0.hsn.cm.aurora"},
      4);
  CHECK(pals.kind == FailureClass::systemic);
  CHECK(pals.what == "PALS could not forward the launch");
  auto one_ok = failed(0, "a", 1, {});
  one_ok.exit_code = 0;
  CHECK(classify_failure({one_ok}, {"Couldn't forward RPC launch(1) to child b"}, 4).kind == FailureClass::other);
  // Faults a node can cause (the Python ezpz's table) are not systemic.
  for (const auto* line : {"RuntimeError: [enforce fail at gloo/transport/tcp/pair.cc:598] Connection closed by peer "
                           "[10.0.0.42]:53121",
                           "[rank7]: RuntimeError: level_zero backend failed with error: 40 "
                           "(UR_RESULT_ERROR_OUT_OF_RESOURCES)",
                           "x1922c7s6b0n0.hsn.cm.sunspot.alcf.anl.gov: shepherd died from signal 9"}) {
    CHECK(classify_failure({failed(0, "a", 1, {line}), failed(1, "b", 1, {line})}, {line}, 2).kind ==
          FailureClass::other);
  }
}

TEST_CASE("decide: storage and systemic blame no node, and a systemic sign makes a launcher's claim no evidence",
          "[failure_signs]") {
  AttemptEvidence ev;
  ev.sign.kind = FailureClass::storage;
  CHECK(decide(ev, {}, {{"node0", true, ""}, {"node1", true, ""}}).kind == VerdictKind::storage);
  // A failed probe still evicts: the node is bad, whatever the lines said.
  const auto bad = decide(ev, {}, {{"node0", true, ""}, {"node1", false, "no answer in 15 s"}});
  CHECK(bad.kind == VerdictKind::bad_nodes);
  ev.sign.kind = FailureClass::systemic;
  // PALS's "Couldn't forward RPC launch ... to child node1" names node1; with every rank failing at
  // start-up it is the symptom, not the cause: node1's probe passed, nothing is evicted.
  const std::vector<Suspect> named = {{"node1", "the launcher says: Couldn't forward RPC launch to child node1", true}};
  const auto v = decide(ev, named, {{"node1", true, ""}});
  CHECK(v.kind == VerdictKind::systemic);
  CHECK(v.evicted.empty());
  ev.sign.kind = FailureClass::other;
  CHECK(decide(ev, named, {{"node1", true, ""}}).kind == VerdictKind::bad_nodes);  // elsewhere a claim names it
}

TEST_CASE("goodput: the succeeded attempt's share of the whole run", "[failure_signs]") {
  const auto g = goodput({{100, 130}, {140, 240}}, true);
  CHECK(g.total_s == Approx(140));
  CHECK(g.useful_s == Approx(100));
  CHECK(g.lost_s == Approx(40));
  CHECK(g.share == Approx(100.0 / 140));
  CHECK(goodput_line(g) ==
        "goodput: 71% (100.0 s of 140.0 s in the attempt that succeeded; 40.0 s lost to failed attempts and restarts)");
  CHECK(goodput({{100, 130}, {140, 150}}, false).share == 0);
  CHECK(goodput({}, false).total_s == 0);
}
