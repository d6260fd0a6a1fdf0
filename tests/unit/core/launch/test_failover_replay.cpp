// NVIDIA resiliency-ext's attribution fixtures replayed through the verdict (its
// tests/attribution/unit/fr_traces/*/fault_injection.log: 16 ranks, two of them faulted after
// 180 s, the rest blocked in their next collective; the faults as its inprocess inject_fault.py
// makes them). The facts kept are the fault ranks, the fault kinds and the lines those kinds print;
// the layout here is 4 ranks per node. NVRx names the faulted ranks from NCCL's flight recorder;
// ezpz has no such trace: what it must do is name no node on these (each one is the
// application's, not a node's), say which rank failed first, and, for a hang, list the ranks that
// went quiet first.
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/launch/failover.hpp"
#include "core/launch/failure_signs.hpp"
#include "core/launch/rank_output.hpp"

using namespace ezpz::core;

namespace {

constexpr double kStart = 1'000'000;     // the attempt's start (epoch seconds)
constexpr double kFault = kStart + 180;  // "Fault delay: 180.0"
const HostList kNodes = {"node0", "node1", "node2", "node3"};

std::string host_of(int rank) {
  return kNodes[static_cast<std::size_t>(rank / 4)];
}

/// A rank that printed every second until `quiet_at` and then said nothing; its shim's heartbeat
/// went on until `heard_at`.
RankWatch running(int rank, double quiet_at, double heard_at) {
  RankWatch w;
  w.rank = rank;
  w.host = host_of(rank);
  w.last_output = quiet_at;
  w.last_line = "iteration " + std::to_string(static_cast<int>(quiet_at - kStart));
  w.heard_at = heard_at;
  return w;
}

RankWatch ended(RankWatch w, int code, double at) {
  w.ended = true;
  w.exit_code = code;
  w.ended_at = at;
  return w;
}

RankExit exit_of(const RankWatch& w, std::vector<std::string> lines) {
  RankExit e;
  e.rank = w.rank;
  e.host = w.host;
  e.exit_code = w.exit_code;
  e.time = w.ended_at;
  e.program = "python3";
  e.last_lines = std::move(lines);
  return e;
}

std::vector<ProbeResult> all_pass() {
  std::vector<ProbeResult> out;
  for (const auto& h : kNodes) {
    out.push_back({h, true, ""});
  }
  return out;
}

/// GPU_ERROR: an out-of-bounds index on the device (a[b] = 0) asserts; the rank's next sync
/// raises, it exits 1 a moment after the fault. ezpz then stops the others (SIGTERM: 143).
AttemptEvidence gpu_error(const std::vector<int>& faulted, std::vector<RankExit>& exits) {
  AttemptEvidence ev;
  const double stop = kFault + 2.5;  // after the start-up delay a failure waits for its peers' words
  for (int r = 0; r < 16; ++r) {
    const bool hit = std::find(faulted.begin(), faulted.end(), r) != faulted.end();
    auto w = running(r, hit ? kFault : kFault + 0.8, stop);
    w = hit ? ended(w, 1, kFault + 0.4 + 0.01 * r) : ended(w, 143, stop + 0.2);
    ev.ranks.push_back(w);
    exits.push_back(exit_of(
        w, hit ? std::vector<std::string>{"../aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], "
                                          "thread: [0,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && "
                                          "\"index out of bounds\"` failed.",
                                          "RuntimeError: CUDA error: device-side assert triggered",
                                          "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."}
               : std::vector<std::string>{w.last_line}));
  }
  ev.stopped_at = stop;
  ev.ended = stop + 0.5;
  ev.claims = launcher_claims("srun: error: node3: task 12: Exited with exit code 1\n");
  return ev;
}

/// LOCK_GIL: a catastrophic regex holds the GIL; the rank prints nothing more, its shim (another
/// process) goes on; every other rank blocks in its next collective within a step. --idle-timeout
/// (300 s) stops the attempt; every rank answers the stop.
AttemptEvidence lock_gil(const std::vector<int>& faulted) {
  AttemptEvidence ev;
  const double stop = kFault + 300;
  for (int r = 0; r < 16; ++r) {
    const bool hit = std::find(faulted.begin(), faulted.end(), r) != faulted.end();
    ev.ranks.push_back(ended(running(r, hit ? kFault : kFault + 1, stop), 143, stop + 0.3));
  }
  ev.stopped_at = stop;
  ev.ended = stop + 1;
  return ev;
}

std::vector<std::string> named_hosts(const std::vector<Suspect>& suspects) {
  std::vector<std::string> out;
  for (const auto& s : suspects) {
    if (s.named) {
      out.push_back(s.host);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("NVRx replay: a GPU error on two ranks is the application's, first failure named, no node", "[failover]") {
  // gpu_error_1st: ranks 12 and 14 (one node here); gpu_error_2nd: ranks 9 and 14 (two nodes).
  for (const auto& faulted : {std::vector<int>{12, 14}, std::vector<int>{9, 14}}) {
    std::vector<RankExit> exits;
    auto ev = gpu_error(faulted, exits);
    ev.sign = classify_failure(exits, {}, 16);
    CHECK(ev.sign.kind == FailureClass::other);  // neither storage nor systemic
    const auto suspects = find_suspects(ev, kNodes);
    CHECK(named_hosts(suspects).empty());  // the launcher's "exited with code 1" names no bad node
    const auto v = decide(ev, suspects, all_pass());
    CHECK(v.kind == VerdictKind::application);
    CHECK(v.evicted.empty());
    const auto first = first_failure(exits, kStart);
    REQUIRE(first);
    CHECK(first->exit.rank == faulted[0]);
  }
}

TEST_CASE("NVRx replay: the NCCL watchdog's timeouts after a GPU error are a cascade, not systemic", "[failover]") {
  // Had nothing stopped them, the blocked ranks die at the watchdog's timeout, 10 minutes on.
  std::vector<RankExit> exits;
  (void)gpu_error({12, 14}, exits);
  for (auto& e : exits) {
    if (e.exit_code == 143) {
      e.exit_code = -6;  // abort()
      e.time = kFault + 600;
      e.last_lines = {"[rank" + std::to_string(e.rank) + "]:[E ProcessGroupNCCL.cpp:616] [Rank " +
                          std::to_string(e.rank) +
                          "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2017, "
                          "OpType=ALLREDUCE, NumelIn=120, NumelOut=120, Timeout(ms)=600000) ran for 600046 "
                          "milliseconds before timing out.",
                      "terminate called after throwing an instance of 'c10::DistBackendError'"};
    }
  }
  CHECK(classify_failure(exits, {}, 16).kind == FailureClass::other);
  CHECK(first_failure(exits, kStart)->exit.rank == 12);
  // Every rank by the watchdog (LOCK_GIL's ranks too: the watchdog is not Python): still the
  // application's, never a start-up sign that would end the job as systemic.
  for (auto& e : exits) {
    e.last_lines = {"Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2017, OpType=ALLREDUCE)"};
  }
  CHECK(classify_failure(exits, {}, 16).kind == FailureClass::other);
}

TEST_CASE("NVRx replay: a rank holding the GIL is a hang: its node passes, the quiet ranks are listed first",
          "[failover]") {
  // lock_gil_1st: ranks 9 and 14; lock_gil_2nd: ranks 10 and 15.
  for (const auto& faulted : {std::vector<int>{9, 14}, std::vector<int>{10, 15}}) {
    const auto ev = lock_gil(faulted);
    CHECK(silent_hosts(ev.ranks).empty());  // every shim spoke until the stop: no node stopped
    const auto suspects = find_suspects(ev, kNodes);
    CHECK(named_hosts(suspects).empty());
    const auto v = decide(ev, suspects, all_pass());
    CHECK(v.kind == VerdictKind::application);
    CHECK(v.evicted.empty());
    // Who went quiet, as the hang's report says it (before the stop): the faulted ranks first.
    auto before = ev.ranks;
    for (auto& w : before) {
      w.ended = false;
    }
    const auto quiet = quiet_report(before, ev.stopped_at, kStart, 2);
    REQUIRE(quiet.size() >= 3);
    CHECK_THAT(quiet[0], Catch::StartsWith("still running: 16 ranks"));
    for (std::size_t k = 0; k < 2; ++k) {
      CHECK_THAT(quiet[k + 1], Catch::Contains("rank " + std::to_string(faulted[k]) + " on " + host_of(faulted[k]) +
                                               ": quiet for 300 s"));
    }
  }
}
