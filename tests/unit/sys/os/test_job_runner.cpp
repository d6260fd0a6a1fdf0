#include <catch2/catch.hpp>

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

}  // namespace

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
      {"sh", "-c",
       "trap '' TERM; echo 'ssh: Could not resolve hostname nosuch.invalid: Name or service not known' >&2; "
       "exec sleep 30"},
      {},
      {},
      "",
      "",
      "",
      false};
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
