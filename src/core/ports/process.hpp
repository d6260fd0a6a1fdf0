// The port through which commands start and supervise programs. sys/ implements it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/expected.hpp"

namespace ezpz::core {

/// One program to start.
struct ProcessSpec {
  std::vector<std::string> argv;                         ///< argv[0] is looked up on PATH
  std::vector<std::pair<std::string, std::string>> set;  ///< variables to add or replace
  std::vector<std::string> unset;                        ///< variables to remove
  std::string label;                                     ///< prefix for each output line when labelling ("[host 3] ")
  std::string log_out;  ///< a file that gets a copy of its stdout, made at the first byte ("": none)
  std::string log_err;  ///< the same for its stderr
  bool console = true;  ///< its lines show on ezpz's stdout and stderr (false: only in the files)
  std::string host;     ///< where it runs, for reports ("" none)
};

/// What the launch knows of one rank while it runs (from its shim, or the built-in launcher).
struct RankWatch {
  int rank = 0;
  std::string host;
  bool ended = false;
  int exit_code = 0;
  double ended_at = 0;     ///< seconds since the epoch (when ended)
  double last_output = 0;  ///< seconds since the epoch of its latest output (0: none yet)
  std::string last_line;   ///< its latest line, on either stream
  double heard_at = 0;     ///< when its shim last sent anything, heartbeats included (0: unknown)
};

/// The first failure a rank reported through the rank hub.
struct RankFailure {
  std::string what;              ///< "rank 1 on node2 exited with code 1"
  int code = 0;                  ///< its exit code
  bool could_not_start = false;  ///< its command could not be started (the other ranks' soon fail alike)
  bool start_up = false;         ///< its last words are a start-up failure every rank shares (a KVS timeout)
};

/// What besides the job's own processes the supervision of a launcher waits on: the rank hub,
/// through which every rank's shim sends its output and its end (core/launch/rank_channel.hpp).
class JobSideChannel {
 public:
  virtual ~JobSideChannel() = default;
  /// Descriptors to wait on now (the rank hub gives one: an epoll set of its listener and every
  /// connection, so that a wake costs what is ready, not a look at every rank's).
  [[nodiscard]] virtual std::vector<int> fds() const = 0;
  /// `fd` is ready: take what it has. True when a rank's output came.
  virtual bool service(int fd) = 0;
  /// Every rank's shim kills its rank at once (SIGKILL): a job ezpz kills leaves no rank behind
  /// wherever the launcher left it.
  virtual void kill_ranks() = 0;
  /// After the launcher ended: take what the shims still send, then kill the ranks of shims
  /// still connected after `grace_s` (the launcher died and left them) and wait up to
  /// `kill_wait_s` for them to go.
  virtual void finish(double grace_s, double kill_wait_s) = 0;
  /// What each rank said: its host, whether it ended, its last line (who went quiet,
  /// stragglers: core::quiet_report, core::straggling).
  [[nodiscard]] virtual std::vector<RankWatch> ranks() const = 0;
  /// The first rank that reported a failure, once; nullopt before and after.
  [[nodiscard]] virtual std::optional<RankFailure> take_failure() = 0;
  /// Stop the job through the ranks' shims: each passes `signo` to its rank and holds its own
  /// end until release_ranks(), so a launcher that kills every rank as soon as one ends (Open
  /// MPI's mpirun) sees none end before all have. False when not every rank can be reached so
  /// (then the launcher is signalled).
  virtual bool stop_ranks(int /*signo*/) { return false; }
  /// Whether every rank the hub reaches has said how it ended (or its shim is gone).
  [[nodiscard]] virtual bool ranks_ended() const { return true; }
  /// The held shims end (as their ranks did).
  virtual void release_ranks() {}
};

struct RunOptions {
  double timeout_s = 0;            ///< watchdog: no output for this long -> stop the job, exit 124 (0 = off)
  double time_limit_s = 0;         ///< wall clock: running this long -> stop the job, exit 124 (0 = off)
  double kill_after_s = 10;        ///< grace between SIGTERM/SIGINT and SIGKILL
  bool label = false;              ///< prefix each output line with the process's label
  bool stop_on_failure = true;     ///< a failing rank stops the others (its code is the job's)
  bool is_launcher = false;        ///< an MPI launcher (gets SIGTERM, not SIGKILL, if ezpz dies)
  bool whole_lines = false;        ///< pass output on whole lines at a time (lines of processes never merge)
  std::string stop_what;           ///< what a stop signal reaches, for the notice ("4 ranks", "mpiexec")
  bool stop_what_many = false;     ///< stop_what names several ("4 ranks": "them", not "it")
  std::vector<std::string> names;  ///< how notices name each process ("rank 2 on host")
  std::function<void(std::string_view)> notice;  ///< one-line messages for the user
  JobSideChannel* side = nullptr;                ///< the rank hub of a launcher's job (nullptr: none)
  double started_epoch = 0;                      ///< when the job started (seconds since the epoch)
  double straggler_after_s = 60;  ///< say who still runs this long after every other rank ended well (0: never)
  /// A launcher's latest lines in, why it cannot go on out (nullopt: it can): ezpz then stops it
  /// and the job ends with ExitCode::unreachable (unset: never asked).
  std::function<std::optional<std::string>(const std::vector<std::string>&)> launcher_blocked;
  /// The launcher kills every rank the moment it is stopped or one rank ends (Open MPI's mpirun):
  /// ezpz's stop goes through the side channel's shims first (JobSideChannel::stop_ranks).
  bool stop_ranks_first = false;
  /// Once every process has started: work that must not hold up their start (unset: none).
  std::function<void()> on_started;
  std::string ranks_what;  ///< the ranks alone ("4 ranks"), for a stop that reaches them through their shims
  /// No rank heard from (the side channel's) this long after the launcher started: say why
  /// (not_started's lines) and stop the launcher; the job ends with ExitCode::unreachable (0: never).
  double start_timeout_s = 0;
  std::function<std::vector<std::string>()> not_started;
  /// The launcher takes one SIGINT for a status request (srun: "one more within 1 sec to
  /// abort"): a SIGINT it must act on goes twice, kSecondInterruptS apart.
  bool interrupt_twice = false;
};

struct RunResult {
  int exit_code = 0;  ///< the job's code (see RunOptions), 124 on timeout, 128+N if ezpz got signal N
  int signal = 0;     ///< terminating signal ezpz received and forwarded (0 = none)
  bool timed_out = false;
  int failed = -1;                         ///< index of the first process that failed (-1 = none)
  int failed_code = 0;                     ///< its exit code (128+N when killed by signal N)
  int failed_signal = 0;                   ///< N when it was killed by signal N
  double failed_time = 0;                  ///< when it ended (seconds since the epoch)
  std::vector<std::string> failed_tail;    ///< the last lines of its stderr (the built-in launcher)
  std::vector<std::string> launcher_tail;  ///< an MPI launcher's last lines (stdout's, then stderr's)
  double stopped_at = 0;                   ///< when ezpz began to stop the job (epoch seconds; 0: it did not)
  std::string blocked;                     ///< why ezpz stopped a launcher that could not go on ("": it did not)
  bool not_started = false;                ///< no rank started within RunOptions::start_timeout_s
};

/// A process of an ezpz-launched job on this node.
struct ProcessInfo {
  int pid = 0;
  int ppid = 0;
  std::string cmdline;  ///< arguments joined by spaces
  std::string job_id;   ///< its EZPZ_JOB_ID ("" when it has none)
  unsigned uid = 0;     ///< its real user id
  int shim = 0;         ///< its parent when that is the caller's ezpz rank shim (__rank-env), else 0
};

/// What `ezpz ARGS` printed on another node.
struct NodeOutput {
  std::string host;
  int exit_code = 0;
  std::string output;  ///< its stdout
  std::string error;   ///< could not connect or start (one line)
};

/// How a child that run_child started ended.
struct ChildExit {
  int exit_code = 0;    ///< its code; 128+N when killed by signal N; 127/126 when exec failed
  int signal = 0;       ///< N when killed by signal N
  int exec_errno = 0;   ///< exec's errno when the program could not be started
  double end_time = 0;  ///< wall clock when it ended (seconds since the epoch)
  long pid = 0;
  std::vector<std::string> last_lines;  ///< the last lines of its stderr
  int kill_signal = 0;                  ///< the signal ezpz kill had passed to it (0: none)
};

class RankLink;

/// Where run_child sends the child's output.
struct ChildIo {
  std::string label;         ///< prefix for each line shown here ("" none)
  bool console = true;       ///< shown here (when no link takes it)
  std::string log_out;       ///< a file that gets a copy of its stdout, made at the first byte ("": none)
  std::string log_err;       ///< the same for its stderr
  RankLink* link = nullptr;  ///< the launching ezpz's rank hub: the output goes there, and the child
                             ///< is killed when the hub says so or is gone
  /// Called once the child runs, when `link` is null: the link to use (nullptr: none), so that
  /// reaching the hub overlaps the command's own start.
  std::function<RankLink*()> connect;
};

/// Run processes here: one child, or a job's ranks under one process group. Port (sys/os).
class JobControl {
 public:
  virtual ~JobControl() = default;
  /// Run argv (PATH lookup) as this process's child, `env` added to the environment (`unset`
  /// removed), pass it SIGINT, SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2, and wait for it. The child
  /// dies with this process (PR_SET_PDEATHSIG); when this process's parent dies (the launcher
  /// left it), or `io.link`'s hub says so or is gone, the child is stopped (SIGTERM, SIGKILL
  /// after the grace). Its output goes where `io` says, whole lines at a time.
  [[nodiscard]] virtual ChildExit run_child(const std::vector<std::string>& argv,
                                            const std::vector<std::pair<std::string, std::string>>& env,
                                            const std::vector<std::string>& unset, const ChildIo& io) = 0;
  /// End as `exit` did where possible (the same signal, default action, no core dump);
  /// returns the code to exit with otherwise.
  [[nodiscard]] virtual int finish_like(const ChildExit& exit) = 0;
  /// Start every process in one new process group, forward SIGINT, SIGTERM, SIGHUP,
  /// SIGUSR1 and SIGUSR2 to it, and wait for all of them. An Error when one cannot start.
  [[nodiscard]] virtual Expected<RunResult> run(const std::vector<ProcessSpec>& processes,
                                                const RunOptions& options) = 0;
  /// A TCP port free on this host, held (SO_REUSEADDR, not listening) until ezpz exits so
  /// that concurrent launches get different ports while the job itself can still bind it.
  [[nodiscard]] virtual int reserve_tcp_port() = 0;
  /// Sleep; false when a forwarded signal arrived meanwhile (stop retrying).
  [[nodiscard]] virtual bool sleep_unless_interrupted(double seconds) = 0;
};

/// This node's processes: find a job's, signal them. Port (sys/os/procs).
class ProcessTable {
 public:
  virtual ~ProcessTable() = default;
  /// The processes on this node that carry an ezpz job id (EZPZ_JOB_ID) and whose environment
  /// this user may read (root: every user's; select_kill_targets keeps the caller's own). Each is
  /// held by its identity, not its number: a process that ends is never mistaken for a new one
  /// given its PID (send_signal, alive).
  [[nodiscard]] virtual std::vector<ProcessInfo> job_processes() = 0;
  /// `sig` to a rank's shim (ProcessInfo::shim), marked as ezpz kill's (core::kKillMark): it
  /// passes the signal to its rank and reports the rank stopped by ezpz kill.
  virtual bool signal_shim(int shim, int sig) = 0;
  /// This process and its ancestors (never signalled by ezpz kill).
  [[nodiscard]] virtual std::vector<int> self_and_ancestors() = 0;
  /// Send `sig` to `pid` (one job_processes found: never another that took its PID since);
  /// false when it is gone or not ours.
  virtual bool send_signal(int pid, int sig) = 0;
  [[nodiscard]] virtual bool alive(int pid) = 0;
};

}  // namespace ezpz::core
