#include <catch2/catch.hpp>

#include <csignal>
#include <vector>

#include "sys/os/job_exit.hpp"

using ezpz::sys::decide_result;
using ezpz::sys::JobStop;
using ezpz::sys::ProcessEnd;

namespace {

// Wait statuses as the kernel encodes them (no fork needed).
constexpr int exited(int code) {
  return (code & 0xff) << 8;
}
constexpr int killed(int signo) {
  return signo & 0x7f;
}

}  // namespace

TEST_CASE("wait statuses: exit code, 128+N for signal N", "[job_exit]") {
  using ezpz::sys::status_code;
  using ezpz::sys::status_signal;
  CHECK(status_code(exited(0)) == 0);
  CHECK(status_code(exited(3)) == 3);
  CHECK(status_code(killed(SIGKILL)) == 137);
  CHECK(status_code(killed(SIGTERM)) == 143);
  CHECK(status_signal(killed(SIGSEGV)) == SIGSEGV);
  CHECK(status_signal(exited(139)) == 0);  // exiting with 139 is not being killed
  CHECK(status_code(0x137f) == 1);         // stopped (SIGSTOP): neither exited nor killed
  CHECK(ezpz::sys::exec_failure_code(ENOENT) == 127);
  CHECK(ezpz::sys::exec_failure_code(EACCES) == 126);
}

TEST_CASE("decide_result: all succeed is 0, no failure named", "[job_exit]") {
  const auto r = decide_result({{0, exited(0), 1.0}, {1, exited(0), 2.0}}, {});
  CHECK(r.exit_code == 0);
  CHECK(r.failed == -1);
  CHECK(r.signal == 0);
  CHECK_FALSE(r.timed_out);
  CHECK(decide_result({}, {}).exit_code == 0);
}

TEST_CASE("decide_result: the first to fail in reaping order decides, not the lowest rank", "[job_exit]") {
  const std::vector<ProcessEnd> ends = {
      {0, exited(0), 1.0}, {3, exited(7), 2.0}, {1, exited(9), 3.0}, {2, killed(SIGKILL), 4.0}};
  const auto r = decide_result(ends, {});
  CHECK(r.exit_code == 7);
  CHECK(r.failed == 3);
  CHECK(r.failed_code == 7);
  CHECK(r.failed_signal == 0);
  CHECK(r.failed_time == 2.0);
}

TEST_CASE("decide_result: a rank killed by a signal gives 128+N and names the signal", "[job_exit]") {
  const auto r = decide_result({{2, killed(SIGSEGV), 5.0}, {0, exited(1), 6.0}}, {});
  CHECK(r.exit_code == 128 + SIGSEGV);
  CHECK(r.failed == 2);
  CHECK(r.failed_signal == SIGSEGV);
}

TEST_CASE("decide_result: a signal ezpz received gives 128+N, the first failure still reported", "[job_exit]") {
  const auto r = decide_result({{1, killed(SIGTERM), 1.0}, {0, exited(0), 1.5}}, JobStop{SIGINT, false});
  CHECK(r.exit_code == 130);
  CHECK(r.signal == SIGINT);
  CHECK(r.failed == 1);
  CHECK(r.failed_code == 143);
  CHECK(decide_result({{0, exited(0), 1.0}}, JobStop{SIGHUP, false}).exit_code == 129);
}

TEST_CASE("decide_result: the watchdog's timeout wins over a signal and a failure", "[job_exit]") {
  const auto r = decide_result({{0, exited(2), 1.0}}, JobStop{SIGTERM, true});
  CHECK(r.exit_code == 124);
  CHECK(r.timed_out);
  CHECK(r.failed == 0);
  CHECK(decide_result({{0, exited(0), 1.0}}, JobStop{0, true}).exit_code == 124);
}

TEST_CASE("decide_result: a rank's failure that made ezpz stop the launcher gives the rank's code", "[job_exit]") {
  ezpz::sys::JobStop stop;
  stop.rank_failed = 7;
  // mpirun, stopped with SIGTERM, exited 143 on its own terms: the job's code is the rank's.
  auto r = decide_result({{0, exited(143), 2.0}}, stop);
  CHECK(r.exit_code == 7);
  // ezpz's own signal or its watchdog still decide.
  stop.signal = SIGINT;
  CHECK(decide_result({{0, exited(143), 2.0}}, stop).exit_code == 128 + SIGINT);
  stop.signal = 0;
  stop.timed_out = true;
  CHECK(decide_result({{0, exited(143), 2.0}}, stop).exit_code == 124);
}

TEST_CASE("decide_result: a launcher ezpz stopped because it could not reach a node exits 255", "[job_exit]") {
  ezpz::sys::JobStop stop;
  stop.blocked = "mpiexec cannot reach node3: ssh: connect to host node3 port 22: No route to host";
  // Hydra, stopped with SIGTERM, exited on its own terms: the job's code is ssh's for an unreachable host.
  auto r = decide_result({{0, exited(143), 2.0}}, stop);
  CHECK(r.exit_code == 255);
  CHECK(r.failed == 0);
  // A rank's failure before it, ezpz's own signal and its watchdog still decide.
  stop.rank_failed = 3;
  CHECK(decide_result({{0, exited(143), 2.0}}, stop).exit_code == 3);
  stop.rank_failed = 0;
  stop.signal = SIGTERM;
  CHECK(decide_result({{0, exited(143), 2.0}}, stop).exit_code == 128 + SIGTERM);
}
