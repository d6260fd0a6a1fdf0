// What ezpz does with the ranks' output, as data: labels with the host, a stream's last lines,
// the console's ranks, the per-rank file names, and who went quiet.
#include <catch2/catch.hpp>

#include "core/launch/failure.hpp"
#include "core/launch/rank_output.hpp"

using namespace ezpz::core;
using Strings = std::vector<std::string>;

TEST_CASE("rank_label names the host and the rank", "[rank_output]") {
  CHECK(rank_label("x4000c0s0b0n0", 3) == "[x4000c0s0b0n0 3] ");
  CHECK(rank_label("", 3) == "[3] ");
}

TEST_CASE("LineTail keeps the last lines as a terminal shows them", "[rank_output]") {
  LineTail tail(3, 10);
  tail.push("one\ntw");
  tail.push("o\n\nthree\r\nfour");
  CHECK(tail.lines() == Strings{"two", "three", "four"});  // the unfinished line counts
  CHECK(tail.last() == "four");
  tail.push("\n");
  CHECK(tail.lines() == Strings{"two", "three", "four"});
  tail.push("progress 1%\rprogress 100%\n");             // a bar redrawn with \r keeps its states as lines
  CHECK(tail.last() == "progress 1... (3 more bytes)");  // width 10: cut, and said
  CHECK(tail.lines()[1] == "progress 1... (1 more byte)");
  LineTail empty;
  CHECK(empty.lines().empty());
  CHECK(empty.last().empty());
}

TEST_CASE("LineTail holds a long line without holding all of it", "[rank_output]") {
  LineTail tail(2, 1000);
  tail.push(std::string(1 << 20, 'x'));
  tail.push("\n");
  REQUIRE(tail.lines().size() == 1);
  CHECK(tail.lines()[0].size() < 1100);
  CHECK_THAT(tail.lines()[0], Catch::EndsWith("(1047576 more bytes)"));
}

TEST_CASE("parse_rank_ranges: lists and ranges, or a usage error naming the flag", "[rank_output]") {
  auto r = parse_rank_ranges("8,0-3, 5", "--console-ranks");
  REQUIRE(r);
  CHECK(ranges_text(*r) == "0-3,5,8");
  CHECK(in_ranges(*r, 2));
  CHECK(in_ranges(*r, 8));
  CHECK_FALSE(in_ranges(*r, 4));
  CHECK(in_ranges({}, 99));  // none given: every rank
  for (const char* bad : {"", "x", "1-", "3-1", "-1", "1,,2", "0x1"}) {
    auto e = parse_rank_ranges(bad, "--console-ranks");
    REQUIRE_FALSE(e);
    CHECK(e.error().code == ezpz::ExitCode::usage);
    CHECK_THAT(e.error().message, Catch::StartsWith("--console-ranks ") && Catch::Contains("0-3,8"));
  }
}

TEST_CASE("last_line: the last non-empty line, cut to a width", "[rank_output]") {
  CHECK(last_line("a\nb\n") == "b");
  CHECK(last_line("a\nb") == "b");
  CHECK(last_line("10%\r50%\r\n\n") == "50%");
  CHECK(last_line("") == "");
  CHECK(last_line("xyz", 2) == "xy");
}

TEST_CASE("rank_log_path names the rank and its host", "[rank_output]") {
  CHECK(rank_log_path("/r/l", 7, "node2", 1) == "/r/l/rank-7.node2.out");
  CHECK(rank_log_path("/r/l", 7, "node2", 2) == "/r/l/rank-7.node2.err");
  CHECK(rank_log_path("/r/l", 0, "a/b", 2) == "/r/l/rank-0.a_b.err");
}

TEST_CASE("quiet_report: the ranks silent longest, with their last lines", "[rank_output]") {
  std::vector<RankWatch> ranks = {
      {0, "node1", false, 0, 0, 990, "step 10"},
      {1, "node1", false, 0, 0, 900, "step 3"},
      {2, "node2", false, 0, 0, 0, ""},  // never printed
      {3, "node2", true, 1, 950, 950, "boom"},
  };
  auto lines = quiet_report(ranks, 1000, 800, 2);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "still running: 3 ranks (the 2 silent longest below)");
  CHECK(lines[1] == "  rank 2 on node2: no output in 200 s");
  CHECK(lines[2] == "  rank 1 on node1: quiet for 100 s; last line: step 3");
  CHECK(quiet_report({{0, "a", true, 0, 10, 10, ""}}, 20, 0).empty());
}

TEST_CASE("quiet_report: every rank but one ended well, and one keeps running", "[rank_output]") {
  std::vector<RankWatch> ranks = {
      {0, "node1", true, 0, 940, 940, "done"},
      {1, "node1", true, 0, 950, 950, "done"},
      {2, "node2", false, 0, 0, 955, "epoch 3"},
  };
  auto lines = quiet_report(ranks, 1000, 900);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == "2 ranks ended with code 0, the last 50 s ago; still running: 1 rank");
  CHECK(lines[1] == "  rank 2 on node2: quiet for 45 s; last line: epoch 3");
}

TEST_CASE("the failure summary shows the first failing rank's last lines, labelled", "[rank_output]") {
  FirstFailure f;
  f.exit.rank = 1;
  f.exit.host = "node2";
  f.exit.exit_code = 1;
  f.exit.program = "python3";
  f.exit.last_lines = {"Traceback (most recent call last):", "ModuleNotFoundError: No module named 'x'"};
  f.failed_ranks = 3;
  auto lines = failure_summary(f);
  REQUIRE(lines.size() == 4);
  CHECK_THAT(lines[0], Catch::StartsWith("job failed: rank 1 on node2 failed first: it exited with code 1"));
  CHECK_THAT(lines[0], Catch::EndsWith("(3 ranks failed)"));
  CHECK(lines[1] == "  its last 2 lines on stderr:");
  CHECK(lines[3] == "  [node2 1] ModuleNotFoundError: No module named 'x'");
  // @record's exception wins where present.
  f.error = RecordedError{"RuntimeError: boom", ""};
  f.error_file = "/r/error-1.json";
  lines = failure_summary(f);
  CHECK(std::find(lines.begin(), lines.end(), "  its last 2 lines on stderr:") == lines.end());
  CHECK(std::find(lines.begin(), lines.end(), "  RuntimeError: boom") != lines.end());
}

TEST_CASE("an exit report carries the rank's last lines", "[rank_output]") {
  RankExit e;
  e.rank = 2;
  e.host = "n";
  e.exit_code = 139;
  e.signal = 11;
  e.time = 5;
  e.last_lines = {"a", "b \"quoted\""};
  auto back = parse_exit_report(exit_report_json(e));
  REQUIRE(back);
  CHECK(*back == e);
}

TEST_CASE("straggling: a few ranks still running long after every other ended well", "[rank_output]") {
  std::vector<RankWatch> ranks = {
      {0, "node1", true, 0, 900, 900, "done"},
      {1, "node1", true, 0, 910, 910, "done"},
      {2, "node2", false, 0, 0, 905, "epoch 3"},
  };
  CHECK_FALSE(straggling(ranks, 960, 60));  // 50 s after the last end
  CHECK(straggling(ranks, 970, 60));
  ranks[1].exit_code = 1;  // a failure is the failure summary's, not a straggler
  CHECK_FALSE(straggling(ranks, 970, 60));
  ranks[1].exit_code = 0;
  ranks[2].ended = true;  // nobody left
  CHECK_FALSE(straggling(ranks, 970, 60));
  CHECK_FALSE(straggling({{0, "a", false, 0, 0, 1, ""}}, 1000, 60));  // nobody ended yet
}
