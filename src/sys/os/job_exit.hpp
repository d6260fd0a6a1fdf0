// The exit code of a job decided from how its processes ended: pure (wait statuses in, a
// RunResult out, no system call), so every rule is unit-tested without forking.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include <sys/wait.h>

#include "core/base/expected.hpp"
#include "core/ports/process.hpp"

namespace ezpz::sys {

/// A process's code from its wait status: its exit code, 128+N when signal N killed it, 1 for
/// anything else (a status that is neither).
[[nodiscard]] constexpr int status_code(int status) {
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status);
  }
  if (WIFSIGNALED(status)) {
    return 128 + WTERMSIG(status);
  }
  return 1;
}

/// The signal that killed it (0: it exited).
[[nodiscard]] constexpr int status_signal(int status) {
  return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

/// The code of a program that could not be run: 127 when it was not found, else 126.
[[nodiscard]] constexpr int exec_failure_code(int exec_errno) {
  return exec_errno == ENOENT ? 127 : 126;
}

/// One process of a job that ended, in the order they were reaped.
struct ProcessEnd {
  std::size_t index = 0;  ///< its place in the job's process list
  int status = 0;         ///< its wait status
  double time = 0;        ///< when it was reaped (seconds since the epoch)
};

/// How the supervisor stopped the job, if it did.
struct JobStop {
  int signal = 0;            ///< the first stopping signal ezpz received and passed on (0: none)
  bool timed_out = false;    ///< the watchdog (--timeout) stopped it
  int rank_failed = 0;       ///< ezpz stopped a launcher's job when a rank reported this code (0: it did not)
  double at = 0;             ///< when ezpz first signalled the job to stop (seconds since the epoch; 0: never)
  std::string blocked;       ///< ezpz stopped a launcher that could not go on, and why ("": it did not)
  bool not_started = false;  ///< ezpz stopped a launcher none of whose ranks started in time
};

/// "exited with code 3", "was killed by signal 9 (SIGKILL)": how a process with this code ended.
[[nodiscard]] inline std::string describe_code(int code) {
  if (code > 128 && code < 128 + 65) {
    const char* name = sigabbrev_np(code - 128);
    return "was killed by signal " + std::to_string(code - 128) +
           (name != nullptr ? std::string(" (SIG") + name + ")" : "");
  }
  return "exited with code " + std::to_string(code);
}

/// The first process among `ends` that failed (a code other than 0); nullptr when none did.
[[nodiscard]] inline const ProcessEnd* first_failure(const std::vector<ProcessEnd>& ends) {
  for (const auto& e : ends) {
    if (status_code(e.status) != 0) {
      return &e;
    }
  }
  return nullptr;
}

/// The job's result: 124 when the watchdog stopped it, else 128+N when ezpz was stopped by
/// signal N, else the code of the rank whose failure stopped it, else 255 when ezpz stopped a
/// launcher that could not reach a node or start a rank, else the code of the first process that failed (the
/// order `ends` lists them in), else 0. The first failure is reported whatever decided the code.
[[nodiscard]] inline core::RunResult decide_result(const std::vector<ProcessEnd>& ends, const JobStop& stop) {
  core::RunResult r;
  r.signal = stop.signal;
  r.timed_out = stop.timed_out;
  if (const auto* failed = first_failure(ends)) {
    r.failed = static_cast<int>(failed->index);
    r.failed_code = status_code(failed->status);
    r.failed_signal = status_signal(failed->status);
    r.failed_time = failed->time;
  }
  if (stop.timed_out) {
    r.exit_code = static_cast<int>(ExitCode::timeout);
  } else if (stop.signal != 0) {
    r.exit_code = 128 + stop.signal;
  } else if (stop.rank_failed != 0) {
    r.exit_code = stop.rank_failed;  // the rank's, whatever the launcher made of being stopped
  } else if (!stop.blocked.empty() || stop.not_started) {
    r.exit_code = static_cast<int>(ExitCode::unreachable);
  } else if (r.failed >= 0) {
    r.exit_code = r.failed_code;
  }
  return r;
}

}  // namespace ezpz::sys
