#include <catch2/catch.hpp>

#include <cerrno>

#include "core/launch/failure.hpp"

using namespace ezpz::core;

namespace {
RankExit exit_of(int rank, double time, int code, int sig = 0, int exec_errno = 0) {
  RankExit e;
  e.rank = rank;
  e.local_rank = rank % 4;
  e.host = "node" + std::to_string(rank / 4 + 1);
  e.exit_code = code;
  e.signal = sig;
  e.exec_errno = exec_errno;
  e.program = "python3";
  e.time = time;
  e.pid = 4000 + rank;
  return e;
}

// What Debian's torch 1.13 @record writes (ErrorHandler.record_exception).
const char* kErrorFile =
    R"({"message": {"message": "RuntimeError: boom", "extraInfo": {"py_callstack": "Traceback (most recent call )"
    R"(last):\n  File \"t.py\", line 9, in <module>\n    main()\n  File \"t.py\", line 7, in main\n    f()\n  )"
    R"(File \"t.py\", line 5, in f\n    raise RuntimeError(\"boom\")\nRuntimeError: boom\n", "timestamp": "1"}}})";
}  // namespace

TEST_CASE("a shim's exit report round-trips, other text is refused", "[failure]") {
  auto e = exit_of(6, 1700000000.25, 139, 11);
  CHECK(parse_exit_report(exit_report_json(e)) == e);
  CHECK_FALSE(parse_exit_report("not json"));
  CHECK_FALSE(parse_exit_report(R"({"rank": "x", "time": 1})"));
  CHECK_FALSE(parse_exit_report(R"({"rank": -1, "time": 1})"));
  CHECK_FALSE(parse_exit_report(R"({"host": "n"})"));
}

TEST_CASE("the first failure is the rank that ended first", "[failure]") {
  CHECK_FALSE(first_failure({}, 0));
  auto f = first_failure({exit_of(3, 105.0, 143, 15), exit_of(1, 102.5, 3), exit_of(2, 104.0, 1)}, 100.0);
  REQUIRE(f);
  CHECK(f->exit.rank == 1);
  CHECK(f->seconds == Approx(2.5));
  CHECK(f->failed_ranks == 3);
  CHECK(f->not_found == 0);
  auto lines = failure_summary(*f);
  CHECK(lines == std::vector<std::string>{
                     "job failed: rank 1 on node1 failed first: it exited with code 3, 2.5 s after the start (3 ranks "
                     "failed)"});
}

TEST_CASE("a missing command is said once, with how many ranks lacked it", "[failure]") {
  auto f = first_failure({exit_of(0, 10, 127, 0, ENOENT), exit_of(1, 10, 127, 0, ENOENT)}, 9.5);
  REQUIRE(f);
  auto lines = failure_summary(*f);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] ==
        "job failed: rank 0 on node1 failed first: it could not start: python3: command not found, 0.5 s after the "
        "start (2 ranks failed)");
  CHECK(lines[1] ==
        "  python3 was not found on 2 ranks: check the name, PATH on the compute nodes, or the modules the job loads");
}

TEST_CASE("a signal is named", "[failure]") {
  CHECK(describe_exit(exit_of(0, 0, 139, 11)) == "was killed by signal 11 (SIGSEGV)");
  CHECK(describe_exit(exit_of(0, 0, 126, 0, EACCES)) == "could not start python3: Permission denied");
}

TEST_CASE("a launcher killed by a signal ezpz did not send: the failed rank's code is the job's", "[failure]") {
  const auto f = first_failure({exit_of(1, 10, 7)}, 9.5);
  RunResult hydra;  // MPICH's mpiexec, dead of SIGPIPE after rank 1 exited 7
  hydra.exit_code = hydra.failed_code = 128 + 13;
  hydra.failed = 0;
  hydra.failed_signal = 13;
  hydra.failed_time = 10.5;  // after rank 1's exit
  CHECK(job_exit_code(hydra, f) == 7);
  CHECK(launcher_death_note("mpiexec", hydra, f) ==
        "mpiexec itself was then killed by signal 13 (SIGPIPE): ezpz exits with rank 1's code, 7");
  CHECK(job_exit_code(hydra, std::nullopt) == 141);  // no rank said anything: the launcher's
  CHECK(launcher_death_note("mpiexec", hydra, std::nullopt).empty());
  RunResult exited = hydra;  // a launcher that exits with a code of its own: that code
  exited.exit_code = exited.failed_code = 3;
  exited.failed_signal = 0;
  CHECK(job_exit_code(exited, f) == 3);
  CHECK(launcher_death_note("mpiexec", exited, f).empty());
  RunResult stopped = hydra;  // ezpz itself got SIGTERM and passed it on: 143 stays
  stopped.signal = 15;
  stopped.exit_code = 143;
  CHECK(job_exit_code(stopped, f) == 143);
  RunResult oom = hydra;  // the launcher killed first (SIGKILL), its ranks dying after it: 137 stays
  oom.exit_code = oom.failed_code = 137;
  oom.failed_signal = 9;
  oom.failed_time = 9.9;
  CHECK(job_exit_code(oom, f) == 137);
  CHECK(launcher_death_note("srun", oom, f).empty());
  RunResult timed_out = hydra;  // the watchdog's 124 stays
  timed_out.timed_out = true;
  timed_out.exit_code = 124;
  CHECK(job_exit_code(timed_out, f) == 124);
}

TEST_CASE("torch's @record error file gives the exception and the last frames", "[failure]") {
  auto e = parse_error_file(kErrorFile);
  REQUIRE(e);
  CHECK(e->message == "RuntimeError: boom");
  CHECK(last_frames(e->traceback, 2) ==
        "Traceback (most recent call last, 2 of 3 frames):\n  File \"t.py\", line 7, in main\n    f()\n"
        "  File \"t.py\", line 5, in f\n    raise RuntimeError(\"boom\")\nRuntimeError: boom");
  CHECK(last_frames(e->traceback, 5) == std::string(e->traceback.substr(0, e->traceback.size() - 1)));
  FirstFailure f{exit_of(2, 5, 1), 1.0, e, "/r/error-2.json"};
  auto lines = failure_summary(f);
  CHECK(lines[1] == "  RuntimeError: boom");
  CHECK(lines[2] == "  | Traceback (most recent call last):");
  CHECK(lines.back() == "  (from /r/error-2.json)");
  // A message-only file (torch's newer string format) and junk.
  CHECK(parse_error_file(R"({"message": "ValueError: x"})")->message == "ValueError: x");
  CHECK_FALSE(parse_error_file("{}"));
  CHECK_FALSE(parse_error_file("garbage"));
}
