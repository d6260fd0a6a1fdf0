// What ezpz says when a job stops early, as data: the signal it got and whom it reached, a
// launch none of whose ranks started (the scheduler's down nodes, the remedy), a node whose
// shims went silent, a rank ezpz kill stopped, and where a failed rank's whole output is.
#include <catch2/catch.hpp>

#include <csignal>

#include "core/job/machine.hpp"
#include "core/launch/failure.hpp"
#include "core/launch/job_stop.hpp"
#include "core/launch/rank_output.hpp"

using namespace ezpz::core;
using Strings = std::vector<std::string>;

TEST_CASE("stop_notice: the signal, whom it reached, when SIGKILL follows", "[job_stop]") {
  CHECK(stop_notice(SIGTERM, "8 ranks", true, 10) ==
        "SIGTERM received (walltime or scancel?): sent to 8 ranks, SIGKILL in 10 s");
  CHECK(stop_notice(SIGINT, "2 ranks", true, 20) ==
        "SIGINT sent to 2 ranks: waiting up to 20 s for them to stop, then SIGKILL (Ctrl-C again to kill now)");
  CHECK(stop_notice(SIGINT, "mpiexec (1 rank)", false, 5) ==
        "SIGINT sent to mpiexec (1 rank): waiting up to 5 s for it to stop, then SIGKILL (Ctrl-C again to kill now)");
  CHECK(stop_notice(SIGHUP, "4 ranks", true, 3) ==
        "SIGHUP received (the terminal closed?): sent to 4 ranks, SIGKILL in 3 s");
}

TEST_CASE("ranks_heard counts the ranks whose shims called", "[job_stop]") {
  std::vector<RankWatch> ranks(4);
  CHECK(ranks_heard(ranks) == 0);
  ranks[2].host = "node3";
  CHECK(ranks_heard(ranks) == 1);
}

TEST_CASE("node states: Slurm's sinfo and PBS's pbsnodes name the job's nodes not up", "[job_stop]") {
  const Strings hosts = {"node1", "node2.cluster", "node3", "node4"};
  CHECK(node_state_command(Scheduler::slurm, hosts) ==
        Strings{"sinfo", "-h", "-N", "-n", "node1,node2,node3,node4", "-o", "%N|%T|%E"});
  CHECK(node_state_command(Scheduler::pbs, hosts) == Strings{"pbsnodes", "-l"});
  CHECK(node_state_command(Scheduler::local, hosts).empty());
  const Strings many(5000, "x1000c0s0b0n0");  // Aurora-sized: not one -n argument
  CHECK(node_state_command(Scheduler::slurm, many) == Strings{"sinfo", "-h", "-N", "-o", "%N|%T|%E"});
  // (a node in two partitions is listed twice; allocated, idle and mixed are up; '*': not responding)
  const auto sinfo =
      "node1|allocated|none\nnode2|down*|Not responding\nnode2|down*|Not responding\n"
      "node3|drained|bad dimm\nnode4|mixed*|none\nnode9|down|elsewhere\n";
  const auto down = parse_node_states(Scheduler::slurm, sinfo, hosts);
  REQUIRE(down.size() == 3);
  CHECK(down[0].host == "node2.cluster");
  CHECK(down[0].state == "down*");
  CHECK(down[0].reason == "Not responding");
  CHECK(down[1].host == "node3");
  CHECK(down[1].reason == "bad dimm");
  CHECK(down[2].host == "node4");
  CHECK(down[2].reason.empty());
  CHECK(parse_node_states(Scheduler::slurm, "node1|idle|none\nnode3|allocated|none\n", hosts).empty());
  const auto pbs = parse_node_states(Scheduler::pbs, "node3      offline   hardware check\nx1  down\n", hosts);
  REQUIRE(pbs.size() == 1);
  CHECK(pbs[0].host == "node3");
  CHECK(pbs[0].state == "offline");
  CHECK(pbs[0].reason == "hardware check");
}

TEST_CASE("not_started_report: how long, which nodes are down, the remedy", "[job_stop]") {
  auto lines = not_started_report("srun", 30, 8, {{"node2", "down*", "Not responding"}}, true);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == "no rank of 8 ranks has started 30 s after srun began (--start-timeout)");
  CHECK(lines[1] == "the scheduler has this node of the job down:");
  CHECK(lines[2] == "  node2: down* (Not responding)");
  CHECK_THAT(lines[3], Catch::Contains("--spare-nodes N") && Catch::Contains("a --hostfile without node2") &&
                           Catch::Contains("ezpz submit --exclude-from"));
  auto none = not_started_report("mpiexec", 45, 2, {}, true);
  REQUIRE(none.size() == 3);
  CHECK_THAT(none[1], Catch::Contains("every node of the job up"));
  CHECK_THAT(none[2], Catch::Contains("--start-timeout SECONDS"));
  CHECK_THAT(not_started_report("mpiexec", 45, 2, {}, false)[1], !Catch::Contains("every node"));
}

TEST_CASE("quiet_report: no rank started, and a node whose shims went silent is named", "[job_stop]") {
  std::vector<RankWatch> never(3);
  CHECK(quiet_report(never, 100, 50) == Strings{"no rank has started: no shim of the 3 ranks has called ezpz"});
  // node2's two shims fell silent 14 s before the others' last word: its evidence, with no spares too.
  std::vector<RankWatch> ranks = {
      {0, "node1", false, 0, 0, 80, "step 3", 100},
      {1, "node1", false, 0, 0, 80, "step 3", 99},
      {2, "node2", false, 0, 0, 80, "step 3", 86},
      {3, "node2", false, 0, 0, 80, "step 3", 85},
  };
  const auto lines = quiet_report(ranks, 101, 0);
  REQUIRE(lines.size() == 6);
  CHECK(lines.back() ==
        "  node2: the ezpz shims of its 2 ranks said nothing for 14 s while the others' did (the node stopped, or "
        "its link went down)");
  CHECK(silent_hosts(ranks).size() == 1);
  ranks[2].heard_at = ranks[3].heard_at = 99;
  CHECK(silent_hosts(ranks).empty());
}

TEST_CASE("a rank ezpz kill stopped is said so, and the summary names the whole output", "[job_stop]") {
  RankExit e;
  e.rank = 2;
  e.host = "node2";
  e.exit_code = 143;
  e.signal = SIGTERM;
  e.kill_signal = SIGTERM;
  e.program = "python3";
  CHECK(describe_exit(e) == "was stopped by ezpz kill (SIGTERM)");
  CHECK(parse_exit_report(exit_report_json(e)) == e);
  FirstFailure f;
  f.exit = e;
  f.seconds = 12.3;
  f.output_file = "/r/launch-1/rank-2.node2.err";
  const auto lines = failure_summary(f);
  CHECK(lines.front() == "job failed: stopped by ezpz kill: rank 2 on node2 got SIGTERM first, 12.3 s after the start");
  CHECK(lines.back() == "  full output: /r/launch-1/rank-2.node2.err");
  e.kill_signal = 0;
  CHECK(describe_exit(e) == "was killed by signal 15 (SIGTERM)");
}

TEST_CASE("every launcher's ranks are stopped through their shims (srun, PALS, Hydra, Open MPI)", "[job_stop]") {
  for (auto s : {LauncherStyle::srun, LauncherStyle::pals, LauncherStyle::mpich, LauncherStyle::openmpi,
                 LauncherStyle::sophia}) {
    CHECK(stops_through_shims(s));
  }
  CHECK_FALSE(stops_through_shims(LauncherStyle::local));  // its ranks are ezpz's own children
}

TEST_CASE("every_rank_succeeded: all ranks ended with 0 (a launcher failing after is its teardown)", "[job_stop]") {
  std::vector<RankWatch> ranks = {{0, "a", true, 0, 1, 1, ""}, {1, "b", true, 0, 1, 1, ""}};
  CHECK(every_rank_succeeded(ranks, 2));
  CHECK_FALSE(every_rank_succeeded(ranks, 3));  // one never reported
  ranks[1].exit_code = 1;
  CHECK_FALSE(every_rank_succeeded(ranks, 2));
  ranks[1].exit_code = 0;
  ranks[1].ended = false;
  CHECK_FALSE(every_rank_succeeded(ranks, 2));
}
