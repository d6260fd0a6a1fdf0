#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/launch/failover.hpp"
#include "sys/os/exec.hpp"
#include "sys/os/fd_io.hpp"

// PosixProcessControl::run supervising an MPI launcher with a rank hub: what the hub hears after
// ezpz began to stop the launcher is a consequence of that stop, never the job's cause.

namespace {

/// A rank hub that reports one rank's failure when the test writes a byte to it.
class OneFailureSide final : public ezpz::core::JobSideChannel {
 public:
  OneFailureSide() {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    read_ = ezpz::sys::OwnedFd(fds[0]);
    write_ = ezpz::sys::OwnedFd(fds[1]);
  }
  /// The rank "dies" now: its report is waiting for the supervisor.
  void report() { REQUIRE(::write(write_.get(), "x", 1) == 1); }
  [[nodiscard]] std::vector<int> fds() const override {
    return read_.valid() ? std::vector<int>{read_.get()} : std::vector<int>{};
  }
  bool service(int fd) override {
    char c = 0;
    if (fd == read_.get() && ::read(fd, &c, 1) == 1) {
      failure_ = ezpz::core::RankFailure{"rank 0 on vm was killed by signal 15 (SIGTERM)", 143, false};
      read_.reset();
    }
    return false;
  }
  void kill_ranks() override {}
  void finish(double /*grace_s*/, double /*kill_wait_s*/) override {}
  [[nodiscard]] std::vector<ezpz::core::RankWatch> ranks() const override { return {}; }
  [[nodiscard]] std::optional<ezpz::core::RankFailure> take_failure() override {
    auto f = failure_;
    failure_.reset();
    return f;
  }

 private:
  ezpz::sys::OwnedFd read_;
  ezpz::sys::OwnedFd write_;
  std::optional<ezpz::core::RankFailure> failure_;
};

/// A rank hub that takes a stop through the shims: the ranks "end" when the test says so.
class HoldingSide final : public ezpz::core::JobSideChannel {
 public:
  [[nodiscard]] std::vector<int> fds() const override { return {}; }
  bool service(int /*fd*/) override { return false; }
  void kill_ranks() override { ++kills; }
  void finish(double /*grace_s*/, double /*kill_wait_s*/) override {}
  [[nodiscard]] std::vector<ezpz::core::RankWatch> ranks() const override { return {}; }
  [[nodiscard]] std::optional<ezpz::core::RankFailure> take_failure() override { return std::nullopt; }
  bool stop_ranks(int signo) override {
    stopped_with = signo;
    return true;
  }
  [[nodiscard]] bool ranks_ended() const override { return ended; }
  void release_ranks() override { ++releases; }
  int stopped_with = 0;
  bool ended = false;
  int releases = 0;
  int kills = 0;
};

}  // namespace

TEST_CASE("run: a launcher that kills its ranks when stopped hears nothing while they stop through their shims",
          "[job_runner]") {
  for (const bool ended : {false, true}) {
    HoldingSide side;
    side.ended = ended;
    ezpz::core::RunOptions options;
    options.is_launcher = true;
    options.stop_ranks_first = true;
    options.time_limit_s = 0.2;
    options.kill_after_s = 1;
    options.stop_what = "mpirun";
    options.side = &side;
    // A launcher that notes a SIGTERM: it never gets one, only the SIGKILL at the end.
    const auto noted = std::filesystem::temp_directory_path() / ("ezpz-term-" + std::to_string(::getpid()));
    std::filesystem::remove(noted);
    const ezpz::core::ProcessSpec launcher{
        .argv = {"sh", "-c", "trap 'echo TERM > \"$0\"' TERM; while :; do sleep 0.05; done", noted.string()},
        .set = {},
        .unset = {},
        .label = "",
        .log_out = "",
        .log_err = "",
        .console = false,
        .host = ""};
    ezpz::sys::PosixProcessControl pc;
    auto r = pc.run({launcher}, options);
    REQUIRE(r);
    CHECK(r->timed_out);
    CHECK(side.stopped_with == SIGTERM);
    CHECK_FALSE(std::filesystem::exists(noted));
    CHECK(side.kills >= 1);                   // the SIGKILL after --kill-after reaches the ranks too
    CHECK(side.releases == (ended ? 1 : 0));  // the shims let go once every rank ended
  }
}

TEST_CASE("run: a rank that dies of the stop of a blocked launcher does not make it a rank's failure", "[job_runner]") {
  OneFailureSide side;
  ezpz::core::RunOptions options;
  options.is_launcher = true;
  options.kill_after_s = 0.3;  // the launcher ignores SIGTERM: SIGKILL ends it
  options.stop_what = "mpiexec";
  options.side = &side;
  options.launcher_blocked = [](const std::vector<std::string>& lines) {
    return ezpz::core::launcher_blocked("mpiexec", lines);
  };
  std::vector<std::string> notices;
  options.notice = [&](std::string_view message) {
    notices.emplace_back(message);
    if (notices.size() == 1) {
      side.report();  // before the launcher is even signalled: the report is waiting at the next poll
    }
  };
  // Hydra's way: ssh's words, then waiting for ever (here, deaf to SIGTERM as well).
  const ezpz::core::ProcessSpec launcher{
      .argv = {"sh", "-c",
               "trap '' TERM; echo 'ssh: Could not resolve hostname nosuch.invalid: Name or service not known' >&2; "
               "exec sleep 30"},
      .set = {},
      .unset = {},
      .label = "",
      .log_out = "",
      .log_err = "",
      .console = false,
      .host = ""};
  ezpz::sys::PosixProcessControl pc;
  auto r = pc.run({launcher}, options);
  REQUIRE(r);
  CHECK(r->exit_code == 255);
  CHECK(r->blocked.find("mpiexec cannot reach nosuch.invalid") != std::string::npos);
  REQUIRE_FALSE(notices.empty());
  CHECK(notices.front().find("stopping mpiexec") != std::string::npos);
  for (const auto& n : notices) {
    CHECK(n.find("killed by signal") == std::string::npos);
  }
}
