// Failover (--spare-nodes): the active/spare split, the launchers' words about nodes, the
// verdict on a failed attempt (never blind), the swap, and each attempt's launcher line.
#include <catch2/catch.hpp>

#include <algorithm>
#include <ctime>

#include "core/base/shell.hpp"
#include "core/launch/failover.hpp"
#include "fake_probe.hpp"
#include "unit/core/launch/launch_plan_job.hpp"

using namespace ezpz::core;
using ezpz::test::make_env;

namespace {

HostList hosts(int n) {
  HostList out;
  for (int i = 0; i < n; ++i) {
    out.push_back("node" + std::to_string(i));
  }
  return out;
}

FailoverRequest spares(std::optional<int> n) {
  return FailoverRequest{true, n, std::nullopt, kDefaultMinAttemptS};
}

RankWatch rank(int r, const std::string& host, int code, double at) {
  return RankWatch{r, host, true, code, at, at, ""};
}

}  // namespace

TEST_CASE("spare nodes: a count or auto", "[failover]") {
  CHECK(parse_spare_nodes("auto").value() == std::nullopt);
  CHECK(parse_spare_nodes("2").value() == 2);
  for (const char* bad : {"0", "-1", "x", "2x", ""}) {
    INFO(bad);
    auto r = parse_spare_nodes(bad);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("--spare-nodes"));
  }
}

TEST_CASE("active and spare nodes: what -n / --nhosts need, the spares after them", "[failover]") {
  TopologyRequest n16;
  n16.nprocs = 16;
  auto s = split_nodes(n16, hosts(5), 4, spares(1));
  REQUIRE(s);
  CHECK(s->active == HostList{"node0", "node1", "node2", "node3"});
  CHECK(s->spare == HostList{"node4"});
  // auto: every node -n does not need.
  s = split_nodes(n16, hosts(7), 4, spares(std::nullopt));
  REQUIRE(s);
  CHECK(s->spare == HostList{"node4", "node5", "node6"});
  // --nhosts, and --spare-nodes with neither: all but N.
  TopologyRequest nh;
  nh.nhosts = 2;
  CHECK(split_nodes(nh, hosts(5), 4, spares(2))->active == HostList{"node0", "node1"});
  CHECK(split_nodes(nh, hosts(5), 4, spares(2))->spare == HostList{"node2", "node3"});
  CHECK(split_nodes({}, hosts(5), 4, spares(1))->active.size() == 4);
  // --ppn decides the nodes -n needs.
  TopologyRequest ppn;
  ppn.nprocs = 8;
  ppn.ppn = 2;
  CHECK(split_nodes(ppn, hosts(5), 4, spares(1))->active.size() == 4);
}

TEST_CASE("active and spare nodes: a refusal names the numbers", "[failover]") {
  TopologyRequest n16;
  n16.nprocs = 16;
  auto r = split_nodes(n16, hosts(5), 4, spares(3));
  REQUIRE_FALSE(r);
  CHECK(r.error().message ==
        "--spare-nodes 3 but the job has 1 node beyond the 4 that -n 16 needs: ask for fewer ranks or a bigger "
        "allocation");
  r = split_nodes(n16, hosts(4), 4, spares(std::nullopt));
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Catch::StartsWith("--auto-retry but the job has 0 nodes beyond the 4 that -n 16"));
  r = split_nodes({}, hosts(4), 4, spares(std::nullopt));
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Catch::Contains("pass -n or --nhosts, or --spare-nodes N"));
  r = split_nodes({}, hosts(2), 4, spares(2));
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Catch::Contains("leaves no node to run on: the job has 2 nodes"));
}

TEST_CASE("launcher claims: srun, PALS, Open MPI and MPICH name nodes", "[failover]") {
  const auto claims = launcher_claims(
      "srun: error: Node failure on nid001234\n"
      "srun: error: nid001235: tasks 4-7: Killed\n"
      "srun: error: nid001236: task 3: Exited with exit code 1\n"
      "x1002c3s4b0n0.hostmgmt: shepherd died from signal 9\n"
      "mpiexec: launch failed on x1000c0s0b0n0: Couldn't forward RPC launch(abc) to child x1000c0s1b0n0\n"
      "  Remote daemon: [[12345,0],2] on node node3\n"
      "=   PID 4242 RUNNING AT node5\n"
      "=   EXIT CODE: 9\n"
      "ezpz: node node9 evicted: ...\n");
  REQUIRE(claims.size() == 6);
  CHECK(claims[0].kind == ClaimKind::node_failure);
  CHECK(claims[0].host == "nid001234");
  CHECK(claims[1].kind == ClaimKind::tasks_killed);
  CHECK(claims[1].host == "nid001235");
  CHECK(claims[2].kind == ClaimKind::shepherd_died);
  CHECK(claims[2].host == "x1002c3s4b0n0.hostmgmt");
  CHECK(claims[3].kind == ClaimKind::rpc_child);
  CHECK(claims[3].host == "x1000c0s1b0n0");  // the child, not the parent
  CHECK(claims[4].kind == ClaimKind::daemon_lost);
  CHECK(claims[4].host == "node3");
  CHECK(claims[5].kind == ClaimKind::tasks_killed);
  CHECK(claims[5].host == "node5");
  // Not claims: an application's exit, the cascade's SIGTERM, a rank's code under MPICH.
  CHECK(launcher_claims("srun: error: nid1: task 0: Exited with exit code 1\n"
                        "rank 3 died from signal 15\n"
                        "srun: error: nid2: tasks 0-3: Terminated\n"
                        "=   PID 1 RUNNING AT node5\n=   EXIT CODE: 1\n")
            .empty());
}

TEST_CASE("launcher claims: ssh's words, as Hydra and Open MPI start their daemons, name a node", "[failover]") {
  const auto claims = launcher_claims(
      "ssh: connect to host node3 port 22: No route to host\n"
      "[mpiexec@login] HYDU_sock_write (utils/sock/sock.c:254): write error (Bad file descriptor)\n"
      "ssh: Could not resolve hostname nid9: Name or service not known\r\n"
      "rank 0: ssh: connect to host node4 port 22: Connection refused\n"  // a rank's line, not ssh's
      "root@node7: Permission denied (publickey).\n"
      "rank 1 said root@node8: Permission denied (publickey).\n");
  REQUIRE(claims.size() == 3);
  CHECK(claims[0].kind == ClaimKind::unreachable);
  CHECK(claims[0].host == "node3");
  CHECK(claims[0].line == "ssh: connect to host node3 port 22: No route to host");
  CHECK(claims[1].kind == ClaimKind::unreachable);
  CHECK(claims[1].host == "nid9");
  CHECK(claims[2].kind == ClaimKind::unreachable);
  CHECK(claims[2].host == "node7");
  CHECK(to_string(ClaimKind::unreachable) == "unreachable");
  // The launcher cannot go on: one line naming it, the host and ssh's words.
  CHECK(launcher_blocked("mpiexec",
                         {"[mpiexec@login] starting", "ssh: connect to host node3 port 22: No route to host"}) ==
        "mpiexec cannot reach node3: ssh: connect to host node3 port 22: No route to host");
  CHECK_FALSE(
      launcher_blocked("mpiexec", {"srun: error: Node failure on nid1", "ezpz: ssh: connect to host a port 22: x"}));
  CHECK_FALSE(launcher_blocked("mpiexec", {}));
  // Named: evicted whatever its probe says (the probe may reach it by another way).
  AttemptEvidence ev;
  ev.ranks = {rank(0, "node1", 143, 105)};
  ev.claims = claims;
  ev.stopped_at = 100;
  ev.ended = 110;
  const auto suspects = find_suspects(ev, {"node1", "node3"});
  const auto it = std::find_if(suspects.begin(), suspects.end(), [](const Suspect& s) { return s.host == "node3"; });
  REQUIRE(it != suspects.end());
  CHECK(it->named);
  const auto v = decide(ev, suspects, {{"node1", true, ""}, {"node3", true, ""}});
  REQUIRE(v.kind == VerdictKind::bad_nodes);
  REQUIRE(v.evicted.size() == 1);
  CHECK(v.evicted[0].host == "node3");
  CHECK_THAT(v.evicted[0].why, Catch::Contains("No route to host"));
}

TEST_CASE("verdict: a node whose ranks and shims were killed first, named by the launcher, is evicted", "[failover]") {
  AttemptEvidence ev;
  ev.ranks = {rank(0, "node0", 1, 105), rank(1, "node0", 1, 105), rank(2, "node1", -1, 100), rank(3, "node1", -1, 100)};
  ev.claims = launcher_claims("srun: error: node1: tasks 2-3: Killed\n");
  ev.ended = 110;
  const HostList active = {"node0", "node1"};
  const auto suspects = find_suspects(ev, active);
  REQUIRE(suspects.size() == 1);
  CHECK(suspects[0].host == "node1");
  CHECK(suspects[0].named);
  const auto v = decide(ev, suspects, {{"node1", true, ""}});
  REQUIRE(v.kind == VerdictKind::bad_nodes);
  REQUIRE(v.evicted.size() == 1);
  CHECK(v.evicted[0].host == "node1");
  CHECK_THAT(v.evicted[0].why, Catch::Contains("ended without a word") && Catch::Contains("tasks 2-3: Killed"));
}

TEST_CASE("verdict: never blind", "[failover]") {
  const HostList active = {"node0", "node1"};
  SECTION("an application error on healthy nodes, then the cascade's kills") {
    AttemptEvidence ev;
    ev.ranks = {rank(0, "node0", 1, 100), rank(1, "node1", -1, 101)};  // killed after rank 0 failed
    ev.claims = launcher_claims("srun: error: node1: task 1: Killed\nrank 1 died from signal 15\n");
    const auto suspects = find_suspects(ev, active);
    CHECK(suspects.empty());
    CHECK(decide(ev, suspects, {{"node0", true, ""}, {"node1", true, ""}}).kind == VerdictKind::application);
  }
  SECTION("rc 143 and nothing else: every node probed, all pass") {
    AttemptEvidence ev;
    ev.ranks = {rank(0, "node0", 143, 100), rank(1, "node1", 143, 100)};
    CHECK(find_suspects(ev, active).empty());
    CHECK(decide(ev, {}, {{"node0", true, ""}, {"node1", true, ""}}).kind == VerdictKind::application);
  }
  SECTION("ranks gone without a word but no launcher claim: evicted only if the probe fails") {
    AttemptEvidence ev;
    ev.ranks = {rank(0, "node0", 1, 105), rank(1, "node1", -1, 100)};
    const auto suspects = find_suspects(ev, active);
    REQUIRE(suspects.size() == 1);
    CHECK_FALSE(suspects[0].named);
    CHECK(decide(ev, suspects, {{"node1", true, ""}}).kind == VerdictKind::application);
    const auto v = decide(ev, suspects, {{"node1", false, "no answer in 15 s"}});
    REQUIRE(v.kind == VerdictKind::bad_nodes);
    CHECK(v.evicted[0].why == "probe: no answer in 15 s");
  }
  SECTION("the job's time limit is a walltime end, not a bad node") {
    AttemptEvidence ev;
    ev.ranks = {rank(0, "node0", -1, 100), rank(1, "node1", -1, 100)};
    ev.claims = launcher_claims("srun: error: node1: tasks 1: Killed\n");
    ev.ended = 1000;
    ev.job_end = 1030;
    CHECK(decide(ev, find_suspects(ev, active), {}).kind == VerdictKind::walltime);
  }
  SECTION("a node none of whose ranks reported is a suspect") {
    AttemptEvidence ev;
    ev.ranks = {rank(0, "node0", 1, 100), RankWatch{1, "", false, 0, 0, 0, ""}};
    const auto suspects = find_suspects(ev, active);
    REQUIRE(suspects.size() == 1);
    CHECK(suspects[0].host == "node1");
    CHECK(suspects[0].why == "none of its ranks ever reported");
  }
}

TEST_CASE("swap: each evicted node replaced in place by the next spare, none left names the nodes", "[failover]") {
  NodeSplit split{{"node0", "node1", "node2"}, {"node3", "node4"}};
  auto s = swap_nodes(split, {{"node1", "probe: no answer in 15 s", {}}});
  REQUIRE(s);
  CHECK(s->active == HostList{"node0", "node3", "node2"});
  CHECK(s->spare == HostList{"node4"});
  CHECK(swap_line({"node1", "probe: no answer in 15 s", {}}, "node3", 1) ==
        "node node1 evicted: probe: no answer in 15 s; node3 takes its place (1 spare left)");
  auto none = swap_nodes(*s, {{"node0", "x", {}}, {"node2", "y", {}}});
  REQUIRE_FALSE(none);
  CHECK_THAT(none.error().message, Catch::StartsWith("no spare node left for 2 failed nodes: node0 (x); node2 (y)"));
}

TEST_CASE("the scheduler's end of the job", "[failover]") {
  CHECK(job_end_time(std::string("1700000000"), std::nullopt) == 1700000000.0);
  CHECK(job_end_time(std::string("1700000000"), std::string("1700000500")) == 1700000500.0);
  CHECK_FALSE(job_end_time(std::string("0"), std::nullopt));
  CHECK_FALSE(job_end_time(std::string("soon"), std::nullopt));
}

namespace {

/// The launcher line of a failover attempt on `active` (spares beside it).
std::string attempt_line(ezpz::test::Job job, const NodeSplit& split, AttemptAfter after = AttemptAfter::start) {
  const auto s = ezpz::test::setting(job);
  auto p =
      plan_on_hosts(job.request, s.env, s.cluster, job.inventory, split, "/rec/hostfile-1", split.active[0], after);
  INFO((p ? "" : p.error().message));
  REQUIRE(p);
  CHECK(p->spare_hosts == split.spare);
  CHECK(p->hosts == split.active);
  CHECK(p->rank.master_addr == split.active[0]);
  return shell_join(p->argv);
}

}  // namespace

TEST_CASE("each attempt's launcher line runs on the active nodes only", "[failover]") {
  const NodeSplit split{{"host0", "host4", "host2", "host3"}, {"host1"}};  // as after a swap put host4 in
  SECTION("srun: --nodelist, nothing that lets Slurm pick others") {
    ezpz::test::Job job{"perlmutter", 5};
    job.request.topology.nprocs = 16;
    CHECK(attempt_line(job, split) ==
          "srun -N4 -n16 --cpus-per-task=32 --gpus-per-node=4 "
          "--nodelist=host0,host4,host2,host3 --cpu-bind=cores python3 -m app.train");
    // After a swap: --overlap (the failed step may still hold the healthy nodes).
    CHECK(attempt_line(job, split, AttemptAfter::swap) ==
          "srun --overlap -N4 -n16 --cpus-per-task=32 --gpus-per-node=4 "
          "--nodelist=host0,host4,host2,host3 --cpu-bind=cores python3 -m app.train");
  }
  SECTION("PALS mpiexec: a hostfile of the active nodes") {
    ezpz::test::Job job{"polaris", 5};
    job.request.topology.nprocs = 16;
    CHECK(attempt_line(job, split) ==
          "mpiexec --envall --line-buffer --np=16 --ppn=4 --hostfile=/rec/hostfile-1 "
          "--cpu-bind=depth --depth=8 python3 -m app.train");
  }
  SECTION("MPICH and Open MPI: the same hostfile") {
    ezpz::test::Job mpich{"local", 5};
    mpich.request.hostfile = "/my/hosts";
    mpich.request.launcher = "mpiexec";
    mpich.request.topology.nprocs = 8;
    mpich.request.topology.ppn = 2;
    mpich.inventory.mpiexec = LauncherProgram{"mpiexec", "/usr/bin/mpiexec", LauncherStyle::mpich};
    CHECK(attempt_line(mpich, split) == "mpiexec -n 8 -ppn 2 -f /rec/hostfile-1 python3 -m app.train");
    ezpz::test::Job ompi{"local", 5};
    ompi.request.hostfile = "/my/hosts";
    ompi.request.topology.nprocs = 8;
    ompi.request.topology.ppn = 2;
    ompi.inventory = ezpz::test::openmpi();
    CHECK(attempt_line(ompi, split) ==
          "mpirun -np 8 --hostfile /rec/hostfile-1 --map-by ppr:2:node python3 -m app.train");
  }
}

TEST_CASE("submit --exclude-from: Slurm's --exclude from a bad-nodes file, PBS says what to do", "[failover]") {
  const std::string file = "# nodes ezpz launch evicted\nnid001  # probe: no answer\n\nnid007\n";
  CHECK(exclusion_arg(true, file, "bad-nodes").value() == "--exclude=nid001,nid007");
  auto pbs = exclusion_arg(false, file, "bad-nodes");
  REQUIRE_FALSE(pbs);
  CHECK_THAT(pbs.error().message, Catch::Contains("pbsnodes -o") && Catch::Contains("nid001, nid007"));
  CHECK_FALSE(exclusion_arg(true, "# nothing\n", "f"));
  auto bad = exclusion_arg(true, "a;rm -rf /\n", "f");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("is not a host name"));
}

TEST_CASE("verdict: a node whose shims went silent while the others spoke is named", "[failover]") {
  const HostList active = {"node0", "node1"};
  auto watch = [](int r, const std::string& host, double heard) {
    RankWatch w{r, host, true, -1, 130, 0, "", heard};  // closed when ezpz stopped the hung job
    return w;
  };
  AttemptEvidence ev;
  ev.ranks = {watch(0, "node0", 129), watch(1, "node1", 110)};
  // Every rank ended without a word, after ezpz began to stop the hung job (the cascade, not
  // evidence): node1 alone is a suspect, named by its silence.
  ev.stopped_at = 125;
  auto named = [&] {
    std::vector<std::string> out;
    for (const auto& s : find_suspects(ev, active)) {
      if (s.named) {
        out.push_back(s.host + ": " + s.why);
      }
    }
    return out;
  };
  REQUIRE(named().size() == 1);
  CHECK_THAT(named()[0], Catch::StartsWith("node1: ") &&
                             Catch::Contains("its rank's ezpz shim said nothing for 19 s while the others' did"));
  CHECK(find_suspects(ev, active).size() == 1);
  ev.stopped_at = 0;  // (had ezpz not stopped it, every node would be a suspect, to probe)
  CHECK(find_suspects(ev, active).size() == 2);
  ev.stopped_at = 125;
  // Within the bound, or a rank that reported its end (done, not silent): nobody named.
  ev.ranks = {watch(0, "node0", 117), watch(1, "node1", 110)};
  CHECK(named().empty());
  ev.ranks = {watch(0, "node0", 129), RankWatch{1, "node1", true, 0, 110, 0, "", 110}};
  CHECK(named().empty());
  // The others answered the stop with their reports (MPICH's SIGTERM): still words after node1's.
  ev.ranks = {RankWatch{0, "node0", true, 143, 129, 0, "", 129}, watch(1, "node1", 110)};
  REQUIRE(named().size() == 1);
  CHECK_THAT(named()[0], Catch::StartsWith("node1: "));
}

TEST_CASE("a PBS job's end from qstat -f: its start plus its walltime", "[failover]") {
  const std::string qstat =
      "Job Id: 4242.aurora-pbs-0001\n    Job_Name = train\n"
      "    Resource_List.walltime = 06:00:00\n    stime = Fri Nov 27 18:00:00 2026\n";
  std::tm tm{};
  REQUIRE(::strptime("Fri Nov 27 18:00:00 2026", "%a %b %d %H:%M:%S %Y", &tm) != nullptr);
  tm.tm_isdst = -1;
  const auto start = static_cast<double>(std::mktime(&tm));
  CHECK(pbs_end_time(qstat) == start + 6 * 3600);
  CHECK_FALSE(pbs_end_time("Job Id: 1\n    Resource_List.walltime = 01:00:00\n"));  // not started
  CHECK_FALSE(pbs_end_time("    stime = yesterday\n    Resource_List.walltime = 01:00:00\n"));
  // ctime's padded day, a walltime past a day; what is not that layout is no time at all.
  std::tm early{};
  REQUIRE(::strptime("Sat Nov  7 08:05:09 2026", "%a %b %d %H:%M:%S %Y", &early) != nullptr);
  early.tm_isdst = -1;
  CHECK(pbs_end_time("    stime = Sat Nov  7 08:05:09 2026\n    Resource_List.walltime = 48:30:15\n") ==
        static_cast<double>(std::mktime(&early)) + 48 * 3600 + 30 * 60 + 15);
  for (const char* bad : {"Sat Now 7 08:05:09 2026", "Sat Nov 7 08:05 2026", "Sat Nov 7 08:05:09 2026 x",
                          "Sat Nov 32 08:05:09 2026", "Sat Nov 7 25:05:09 2026", "Sat ovN 7 08:05:09 2026"}) {
    CHECK_FALSE(pbs_end_time(std::string("    stime = ") + bad + "\n    Resource_List.walltime = 01:00:00\n"));
  }
  for (const char* bad : {"1:00", "01:00:00:00", "1:-5:00", "a:00:00", "01::00"}) {
    CHECK_FALSE(
        pbs_end_time(std::string("    stime = Sat Nov  7 08:05:09 2026\n    Resource_List.walltime = ") + bad + "\n"));
  }
}
