// The root cause of a failed job: what each failed rank's shim reported, the exception its
// torch `@record` main left in TORCHELASTIC_ERROR_FILE, and the one summary ezpz prints.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ports/process.hpp"

namespace ezpz::core {

/// How one rank ended, as its shim (or the built-in launcher) saw it.
struct RankExit {
  int rank = 0;
  int local_rank = 0;
  std::string host;
  int exit_code = 0;    ///< its code, 128+N when killed by signal N
  int signal = 0;       ///< N when killed by a signal
  int exec_errno = 0;   ///< the command could not be started (ENOENT: not found)
  std::string program;  ///< argv[0] of the rank's command
  double time = 0;      ///< when it ended, seconds since the epoch
  long pid = 0;
  std::vector<std::string> last_lines;  ///< the last lines of its stderr (its last words)
  int kill_signal = 0;                  ///< the signal `ezpz kill` sent it through its shim (0: none)
  bool operator==(const RankExit&) const = default;
};

/// One line of JSON: what a shim writes to exit_report_path() when its rank failed.
[[nodiscard]] std::string exit_report_json(const RankExit& exit);
/// nullopt when `text` is not such a report.
[[nodiscard]] std::optional<RankExit> parse_exit_report(std::string_view text);

/// What torch's `@record` wrote: {"message": {"message": "...", "extraInfo": {"py_callstack": ...}}}.
struct RecordedError {
  std::string message;    ///< "RuntimeError: boom"
  std::string traceback;  ///< the Python traceback as printed ("" when none)
};
[[nodiscard]] std::optional<RecordedError> parse_error_file(std::string_view text);

/// The last `frames` frames of a Python traceback, with its header and its exception lines.
[[nodiscard]] std::string last_frames(const std::string& traceback, int frames);

/// The job's first failure: the failed rank that ended first.
struct FirstFailure {
  RankExit exit;
  double seconds = 0;  ///< after the job started
  std::optional<RecordedError> error;
  std::string error_file;   ///< where `error` came from ("" when none)
  int failed_ranks = 1;     ///< how many ranks reported a failure (the first one among them)
  int not_found = 0;        ///< how many of them could not find the command
  std::string output_file;  ///< its stderr's file, the whole of it (its stdout's beside it: .out); "" when none
};

/// The earliest of `exits` (nullopt when empty); `start` is the job's start (epoch seconds).
[[nodiscard]] std::optional<FirstFailure> first_failure(const std::vector<RankExit>& exits, double start);

/// "rank 3 on node2" ("rank 3" when the host is not known).
[[nodiscard]] std::string where(const RankExit& exit);

/// "exited with code 3", "was killed by signal 11 (SIGSEGV)", "could not start: command not found".
[[nodiscard]] std::string describe_exit(const RankExit& exit);

/// The summary ezpz prints on stderr when a job failed (lines without the "ezpz: " tag).
[[nodiscard]] std::vector<std::string> failure_summary(const FirstFailure& failure);

/// The job's code once its launcher has ended: the launcher's own, except when a signal ezpz did
/// not send killed the launcher after a rank had failed (MPICH's hydra mpiexec dies of SIGPIPE
/// now and then as its proxies exit): then the code of the rank that failed first, the job's.
/// (A launcher killed first keeps its code: the ranks that ended after it died of its death.)
[[nodiscard]] int job_exit_code(const RunResult& result, const std::optional<FirstFailure>& failure);

/// The line that says so when job_exit_code() took the rank's code ("" when it did not):
/// "mpiexec itself was then killed by signal 13 (SIGPIPE): ezpz exits with rank 1's code, 7".
[[nodiscard]] std::string launcher_death_note(std::string_view launcher, const RunResult& result,
                                              const std::optional<FirstFailure>& failure);

/// What a launcher said that explains its failure, from its output: its first line naming an
/// error, else its first line of words (not a banner of dashes, not "Type 'mpiexec --help' for
/// usage.", not a line holding `skip`); "" when it said nothing.
[[nodiscard]] std::string launcher_says(std::string_view output, std::string_view skip = {});

}  // namespace ezpz::core
