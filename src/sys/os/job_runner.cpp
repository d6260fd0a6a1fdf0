// PosixProcessControl::run: spawn a job's processes in one process group, supervise them (relay
// signals, label and watch their output, reap them), then decide the exit code (job_exit.hpp).
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/job/kill.hpp"
#include "core/launch/job_stop.hpp"
#include "sys/os/exec.hpp"
#include "sys/os/fd_io.hpp"
#include "sys/os/job_exit.hpp"
#include "sys/os/line_relay.hpp"
#include "sys/os/owned.hpp"
#include "sys/os/signal_relay.hpp"

namespace ezpz::sys {
namespace {

using Clock = std::chrono::steady_clock;
using core::ProcessSpec;

/// How long a launcher may run on after every rank has sent its end before it is stopped (MPI
/// launchers end within a second or two of their ranks; Open MPI's mpirun not while another
/// process holds a connection to its port).
constexpr double kLauncherOutlivedS = 10;
/// ...and how long after its SIGTERM it is killed (its ranks have all ended).
constexpr double kLauncherTermS = 2;
/// srun takes one SIGINT for a status request and two within a second for an abort.
constexpr double kSecondInterruptS = 0.3;
using core::RunOptions;
using core::RunResult;

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

/// What supervising a job saw: how each process ended, in the order they were reaped, and
/// how ezpz stopped the job, if it did (decide_result turns it into the result).
struct Supervised {
  std::vector<ProcessEnd> ends;
  JobStop stop;
  std::vector<std::string> failed_tail;    ///< the last stderr lines of the first that failed
  std::vector<std::string> launcher_tail;  ///< a launcher's last lines, stdout's then stderr's
};

/// One run of a job: its processes in one process group, their output, the signals ezpz gets,
/// the watchdog and the grace before SIGKILL. What it opens and starts it owns: its pipes close
/// and its processes are killed and reaped with it, whatever path leaves the run.
class Supervisor {
 public:
  Supervisor(const RunOptions& options, SignalRelay& signals) : options_(options), signals_(signals) {}
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;
  ~Supervisor() {
    kill_group(SIGKILL);  // nothing outlives the run; children_ then reaps each (OwnedChild)
  }

  /// Start every process; an Error when one cannot be started (the others are killed and reaped).
  Expected<void> spawn(const std::vector<ProcessSpec>& processes) {
    devnull_ = open_null(O_RDONLY);
    stdin_is_tty_ = ::isatty(0) == 1;
    children_.reserve(processes.size());
    for (std::size_t i = 0; i < processes.size(); ++i) {
      if (auto started = spawn_one(i, processes.size(), processes[i]); !started) {
        kill_group(SIGKILL);
        children_.clear();  // each killed and reaped
        streams_.clear();
        return started.error();
      }
    }
    devnull_.reset();
    running_ = children_.size();
    last_output_ = Clock::now();
    started_ = last_output_;
    return {};
  }

  /// Until every process has ended: output, signals, exits and deadlines; then what they left
  /// in their pipes.
  Supervised supervise() {
    while (running_ > 0) {
      auto fds = wait_for_events();
      const auto now = Clock::now();
      pass_output(fds, now);  // first, so a failing rank's last lines come before our notice
      handle_signals();
      release_held_ranks();
      reap();
      check_deadlines(now);
      check_started(now);
      check_stragglers();
      check_launcher_outlived(now);
    }
    for (auto& s : streams_) {
      drain_lines(s);
    }
    if (options_.side != nullptr) {
      options_.side->finish(2.0, options_.kill_after_s + 1);  // the launcher may have left ranks behind
    }
    Supervised out{std::move(ends_), stop_, {}, {}};
    if (const auto* f = first_failure(out.ends); f != nullptr && 2 * f->index + 1 < streams_.size()) {
      out.failed_tail = streams_.at(2 * f->index + 1).tail.lines();
    }
    if (options_.is_launcher && streams_.size() >= 2) {  // what it said of nodes (failover's evidence)
      out.launcher_tail = streams_[0].tail.lines();
      const auto err = streams_[1].tail.lines();
      out.launcher_tail.insert(out.launcher_tail.end(), err.begin(), err.end());
    }
    streams_.clear();
    return out;
  }

 private:
  bool capture() const {
    return options_.label || options_.whole_lines || options_.timeout_s > 0 || options_.side != nullptr;
  }

  void kill_group(int signo) const {
    if (signo == SIGKILL && options_.side != nullptr) {
      options_.side->kill_ranks();  // wherever the launcher runs them
    }
    if (pgid_ > 0) {
      ::kill(-pgid_, signo);
    }
  }

  /// Who went quiet: the hub's ranks, or the built-in launcher's.
  void quiet_report() const {
    for (const auto& line : core::quiet_report(watches(), wall_clock_seconds(), options_.started_epoch)) {
      notice(line);
    }
  }

  /// Once: a few ranks still running long after every other one ended well.
  void check_stragglers() {
    if (straggle_said_ || options_.straggler_after_s <= 0 || stop_.signal != 0 || stop_.timed_out) {
      return;
    }
    if (core::straggling(watches(), wall_clock_seconds(), options_.straggler_after_s)) {
      straggle_said_ = true;
      quiet_report();
    }
  }

  /// Every rank has sent its end, yet the launcher runs on kLauncherOutlivedS later (Open MPI's
  /// mpirun waits for as long as anyone holds a connection to its port, and any user can:
  /// docs/security.md): it is stopped, and its end counts as the ranks' (their first failure's
  /// code, else 0), not as the signal's.
  void check_launcher_outlived(Clock::time_point now) {
    if (!options_.is_launcher || options_.side == nullptr || outlived_code_ || stop_.at != 0 || children_.empty() ||
        !children_[0].owned() || !options_.side->ranks_ended()) {
      return;
    }
    const auto ranks = options_.side->ranks();
    const bool all_said = !ranks.empty() && std::all_of(ranks.begin(), ranks.end(), [](const core::RankWatch& w) {
      return w.ended && w.exit_code >= 0;
    });
    if (!all_said) {
      ranks_done_at_.reset();
      return;
    }
    if (!ranks_done_at_) {
      ranks_done_at_ = now;
      return;
    }
    if (now - *ranks_done_at_ < seconds(kLauncherOutlivedS)) {
      return;
    }
    int code = 0;
    for (const auto& w : ranks) {
      code = code != 0 ? code : w.exit_code;
    }
    outlived_code_ = code;
    const auto name = options_.names.empty() ? std::string("the launcher") : options_.names[0];
    notice(name + " still runs " + std::to_string(static_cast<long>(kLauncherOutlivedS)) +
           " s after every rank ended (another process holding a connection to its port?): stopping it");
    ::kill(children_[0].pid(), SIGTERM);
    kill_deadline_ = now + seconds(kLauncherTermS);  // its ranks are gone: nothing to wait for
  }

  /// The ranks as the hub heard them; the built-in launcher's own; none for a launcher alone.
  std::vector<core::RankWatch> watches() const {
    if (options_.side != nullptr) {
      return options_.side->ranks();
    }
    std::vector<core::RankWatch> ranks;
    for (std::size_t i = 0; i < children_.size() && 2 * i + 1 < streams_.size() && !options_.is_launcher; ++i) {
      ranks.push_back(watch_of(i));
    }
    return ranks;
  }

  core::RankWatch watch_of(std::size_t i) const {
    const auto& out = streams_[2 * i];
    const auto& err = streams_[2 * i + 1];
    const auto& latest = out.last_time >= err.last_time ? out : err;
    core::RankWatch w{static_cast<int>(i), hosts_[i], false, 0, 0, latest.last_time, latest.tail.last()};
    for (const auto& e : ends_) {
      if (e.index == i) {
        w.ended = true;
        w.exit_code = status_code(e.status);
        w.ended_at = e.time;
      }
    }
    return w;
  }

  /// "; ulimit -u is 4096 (yours running now count too): lower -n or raise it" when the limit is set.
  static std::string process_limit_note() {
    rlimit lim{};
    if (::getrlimit(RLIMIT_NPROC, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) {
      return ": the system's process or memory limit: lower -n";
    }
    return ": ulimit -u is " + std::to_string(lim.rlim_cur) +
           " (every process of yours counts, not only this job's): lower -n, or raise it (ulimit -u)";
  }

  Expected<void> spawn_one(std::size_t i, std::size_t total, const ProcessSpec& spec) {
    auto prepared = prepare_exec(spec.argv, spec.set, spec.unset);
    OwnedPipe out, err, exec_error;
    if (capture() && (!out.open() || !err.open())) {
      return failure(std::string("cannot create pipes: ") + std::strerror(errno));
    }
    if (!exec_error.open()) {
      return failure(std::string("cannot create a pipe: ") + std::strerror(errno));
    }
    // stdin: the first process keeps a non-terminal stdin; a terminal would stop a
    // background process group with SIGTTIN, so it gets /dev/null like the rest.
    const ChildStart start{::getpid(),
                           pgid_,
                           options_.is_launcher ? SIGTERM : SIGKILL,
                           (i == 0 && !stdin_is_tty_) ? 0 : devnull_.get(),
                           capture() ? out.write_end() : -1,
                           capture() ? err.write_end() : -1,
                           exec_error.write_end()};
    const pid_t pid = ::vfork();  // no copy of ezpz's memory: the child only execs
    if (pid == 0) {
      exec_started(prepared, start, signals_.inherited_ignored());
    }
    exec_error.close_write();
    if (pid < 0) {
      const int fork_errno = errno;
      return failure(std::string("cannot fork: ") + std::strerror(fork_errno) +
                     (total > 1 ? " after " + std::to_string(i) + " of " + std::to_string(total) + " processes" +
                                      (fork_errno == EAGAIN ? process_limit_note() : "")
                                : ""));
    }
    pgid_ = pgid_ == 0 ? pid : pgid_;
    ::setpgid(pid, pgid_);  // also here, so the group exists before we signal it
    children_.emplace_back(pid);
    hosts_.push_back(spec.host);
    if (capture()) {
      // Whole lines when labelling or asked to; the watchdog alone passes bytes on as they come.
      const std::string label = options_.label ? spec.label : "";
      const bool whole = options_.label || options_.whole_lines;
      for (int k = 1; k <= 2; ++k) {
        auto& s = streams_.emplace_back();
        s.fd = k == 1 ? out.take_read() : err.take_read();
        s.out_fd = spec.console ? k : -1;
        s.label = label;
        s.whole = whole;
        s.log_path = k == 1 ? spec.log_out : spec.log_err;
        if (k == 1 && !options_.is_launcher) {
          s.tail = core::LineTail(1, 300);  // its last line; stderr keeps the last words
        }
      }
    }
    int e = 0;
    if (::read(exec_error.read_end(), &e, sizeof(e)) != static_cast<ssize_t>(sizeof(e))) {
      return {};
    }
    const auto& prog = spec.argv.front();
    if (e == ENOENT) {
      return Error{ExitCode::not_found, prog + ": command not found: check the name, PATH or the loaded modules"};
    }
    return Error{ExitCode::cannot_execute, "cannot execute " + prog + ": " + std::strerror(e)};
  }

  std::vector<pollfd> wait_for_events() const {
    std::vector<pollfd> fds = {{signals_.fd(), POLLIN, 0}};
    for (const auto& s : streams_) {
      fds.push_back({s.fd.get(), POLLIN, 0});  // -1 once it ended: poll skips it
    }
    if (options_.side != nullptr) {
      for (int fd : options_.side->fds()) {
        fds.push_back({fd, POLLIN, 0});
      }
    }
    std::optional<Clock::time_point> wake = kill_deadline_;
    if (ranks_done_at_ && !outlived_code_) {
      const auto outlived = *ranks_done_at_ + seconds(kLauncherOutlivedS);
      wake = wake ? std::min(*wake, outlived) : outlived;
    }
    for (const auto& at : {rank_stop_at_, second_interrupt_at_, start_deadline()}) {
      if (at) {
        wake = wake ? std::min(*wake, *at) : at;
      }
    }
    if (options_.timeout_s > 0 && !stop_.timed_out) {
      const auto quiet = last_output_ + seconds(options_.timeout_s);
      wake = wake ? std::min(*wake, quiet) : quiet;
    }
    if (options_.time_limit_s > 0 && !stop_.timed_out) {
      const auto limit = started_ + seconds(options_.time_limit_s);
      wake = wake ? std::min(*wake, limit) : limit;
    }
    int wait_ms = -1;
    if (wake) {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*wake - Clock::now()).count() + 1;
      wait_ms = static_cast<int>(std::max<long>(ms, 0));
    }
    if (!straggle_said_ && options_.straggler_after_s > 0) {
      wait_ms = wait_ms < 0 ? 5000 : std::min(wait_ms, 5000);  // a look for stragglers now and then
    }
    ::poll(fds.data(), fds.size(), wait_ms);
    return fds;
  }

  void pass_output(const std::vector<pollfd>& fds, Clock::time_point now) {
    for (std::size_t k = 1; k < fds.size(); ++k) {
      if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
        continue;
      }
      if (k - 1 >= streams_.size()) {
        if (options_.side->service(fds[k].fd)) {
          last_output_ = now;  // a rank's output, through the hub
        }
        on_rank_failure();
        continue;
      }
      auto& s = streams_[k - 1];
      if (s.fd.valid() && pump_lines(s) == Pumped::data) {
        last_output_ = now;
        check_blocked(s);
      }
    }
  }

  /// A launcher whose words say it cannot go on (a node its ssh cannot reach, which MPICH's
  /// Hydra waits for forever) is stopped.
  void check_blocked(const LineStream& s) {
    if (!options_.is_launcher || !options_.launcher_blocked || !stop_.blocked.empty() || stop_.at != 0 ||
        running_ == 0) {
      return;
    }
    if (auto why = options_.launcher_blocked(s.tail.lines())) {
      stop_.blocked = *why;
      notice(*why + ": stopping " + options_.stop_what);
      start_stopping(SIGTERM);
    }
  }

  void notice(const std::string& message) const {
    if (options_.notice) {
      options_.notice(message);
    }
  }

  void start_stopping(int signo) {
    if (stop_.at == 0) {
      stop_.at = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    }
    // A launcher that kills every rank the moment it is stopped (Open MPI's mpirun) hears of the
    // stop only once the ranks, stopped through their shims, have all ended.
    if (!ranks_held_) {
      ranks_held_ = options_.stop_ranks_first && options_.side != nullptr && options_.side->stop_ranks(signo);
      if (!ranks_held_) {
        kill_group(signo);
        if (signo == SIGINT && options_.interrupt_twice) {
          second_interrupt_at_ = Clock::now() + seconds(kSecondInterruptS);
        }
      }
    }
    if (!kill_deadline_) {
      kill_deadline_ = Clock::now() + seconds(options_.kill_after_s);
    }
  }

  /// Every rank stopped through its shim has ended: the shims may end (then the launcher).
  void release_held_ranks() {
    if (ranks_held_ && !ranks_released_ && options_.side->ranks_ended()) {
      ranks_released_ = true;
      options_.side->release_ranks();
    }
  }

  void handle_signals() {
    for (int signo : signals_.drain()) {
      if (signo == SIGCHLD) {
        continue;  // reaped below
      }
      if (signo == SIGINT && ++sigints_ >= 2) {
        notice("second interrupt: killing the job");
        kill_group(SIGKILL);
      } else if (signo == SIGUSR1 || signo == SIGUSR2) {
        kill_group(signo);
      } else {
        const bool first = stop_.signal == 0 && running_ > 0;
        stop_.signal = stop_.signal != 0 ? stop_.signal : signo;
        start_stopping(signo);
        if (first) {
          say_stopping(signo);
        }
      }
    }
  }

  /// What a signal ezpz received did: whom it reached (the ranks through their shims, or the
  /// launcher), when SIGKILL follows, and who had gone quiet; or that no rank had started.
  void say_stopping(int signo) const {
    if (options_.side != nullptr && core::ranks_heard(options_.side->ranks()) == 0) {
      notice(core::signal_name(signo) + " received before any rank started: stopping " + options_.stop_what);
      return;
    }
    const bool through_shims = ranks_held_ && !options_.ranks_what.empty();
    notice(core::stop_notice(signo, through_shims ? options_.ranks_what : options_.stop_what,
                             through_shims || options_.stop_what_many, options_.kill_after_s));
    quiet_report();
  }

  /// When a launcher's start must have been heard of by then (none: not watched, or said).
  std::optional<Clock::time_point> start_deadline() const {
    if (options_.start_timeout_s <= 0 || options_.side == nullptr || start_checked_ || stop_.at != 0) {
      return std::nullopt;
    }
    return started_ + seconds(options_.start_timeout_s);
  }

  /// No rank heard from start_timeout_s after the launcher started: why (the scheduler's
  /// nodes), and the launcher is stopped.
  void check_started(Clock::time_point now) {
    const auto deadline = start_deadline();
    if (!deadline || now < *deadline || running_ == 0) {
      return;
    }
    start_checked_ = true;
    if (core::ranks_heard(options_.side->ranks()) > 0) {
      return;
    }
    for (const auto& line : options_.not_started ? options_.not_started() : std::vector<std::string>{}) {
      notice(line);
    }
    notice("stopping " + options_.stop_what);
    stop_.not_started = true;
    start_stopping(SIGTERM);
  }

  /// Collect the processes that ended; at the first failure, stop the rest if asked to.
  void reap() {
    for (std::size_t i = 0; i < children_.size(); ++i) {
      auto status = children_[i].try_wait();
      if (!status) {
        continue;
      }
      if (i == 0 && outlived_code_) {
        status = W_EXITCODE(*outlived_code_ & 0xFF, 0);  // stopped by us once its ranks had all ended
      }
      --running_;
      const bool first = status_code(*status) != 0 && first_failure(ends_) == nullptr;
      ends_.push_back({i, *status, wall_clock_seconds()});
      if (first) {
        on_first_failure(i, status_code(*status));
      }
    }
  }

  /// A launcher's rank reported a failure: the job stops as the built-in launcher's does (srun
  /// and MPICH's mpiexec would let the others run on, stuck in their next collective).
  void on_rank_failure() {
    auto failed = options_.side->take_failure();
    // A rank that dies of the stop ezpz began for a blocked launcher is its consequence, not a cause.
    if (!failed || !options_.stop_on_failure || running_ == 0 || stop_.signal != 0 || stop_.timed_out ||
        stop_.rank_failed != 0 || !stop_.blocked.empty()) {
      return;
    }
    stop_.rank_failed = failed->code;
    if (failed->could_not_start || failed->start_up) {
      // A missing command is missing on the other ranks too, most often, and a start-up that timed
      // out (a KVS timeout) times out on them too: let them say so first (a systemic failure).
      notice(failed->what + ": stopping " + options_.stop_what + " in 2 s");
      rank_stop_at_ = Clock::now() + std::chrono::seconds(2);
      return;
    }
    notice(failed->what + ": stopping " + options_.stop_what);
    start_stopping(SIGTERM);
  }

  void on_first_failure(std::size_t index, int code) {
    if (options_.stop_on_failure && running_ > 0 && stop_.signal == 0 && !stop_.timed_out) {
      const auto name = index < options_.names.size() ? options_.names[index] : "process " + std::to_string(index);
      notice(name + " " + describe_code(code) + ": stopping the other " + std::to_string(running_) +
             (running_ == 1 ? " process" : " processes"));
      start_stopping(SIGTERM);
    }
  }

  void check_deadlines(Clock::time_point now) {
    if (options_.timeout_s > 0 && !stop_.timed_out && running_ > 0 &&
        now - last_output_ >= seconds(options_.timeout_s)) {
      stop_.timed_out = true;
      notice("no output for " + std::to_string(static_cast<long>(options_.timeout_s)) +
             " s: stopping the job (--idle-timeout)");
      quiet_report();
      start_stopping(SIGTERM);
    }
    if (options_.time_limit_s > 0 && !stop_.timed_out && running_ > 0 &&
        now - started_ >= seconds(options_.time_limit_s)) {
      stop_.timed_out = true;
      notice("ran for " + std::to_string(static_cast<long>(options_.time_limit_s)) +
             " s: stopping the job (--time-limit)");
      quiet_report();
      start_stopping(SIGTERM);
    }
    if (second_interrupt_at_ && now >= *second_interrupt_at_) {
      second_interrupt_at_.reset();
      if (running_ > 0) {
        kill_group(SIGINT);  // srun's abort: its tasks get SIGINT, then SIGKILL
      }
    }
    if (rank_stop_at_ && now >= *rank_stop_at_ && running_ > 0) {
      rank_stop_at_.reset();
      start_stopping(SIGTERM);
    }
    if (kill_deadline_ && now >= *kill_deadline_ && running_ > 0) {
      notice("still running " +
             std::to_string(static_cast<long>(outlived_code_ ? kLauncherTermS : options_.kill_after_s)) +
             " s after the stop signal: sending SIGKILL");
      kill_group(SIGKILL);
      kill_deadline_ = now + std::chrono::hours(24);
    }
  }

  const RunOptions& options_;
  SignalRelay& signals_;
  std::vector<OwnedChild> children_;  ///< in spawn order: the index is the process's
  std::vector<std::string> hosts_;    ///< where each runs (ProcessSpec::host)
  std::vector<LineStream> streams_;
  OwnedFd devnull_;  ///< while spawning
  pid_t pgid_ = 0;
  bool stdin_is_tty_ = false;
  std::size_t running_ = 0;
  int sigints_ = 0;
  bool straggle_said_ = false;
  Clock::time_point last_output_;
  Clock::time_point started_;
  std::optional<Clock::time_point> kill_deadline_;
  bool ranks_held_ = false;      ///< stopped through the shims, which hold their ends (stop_ranks_first)
  bool ranks_released_ = false;  ///< and let go once every rank ended
  std::optional<Clock::time_point> rank_stop_at_;         ///< a rank could not start its command: stop then
  std::optional<Clock::time_point> second_interrupt_at_;  ///< srun's second SIGINT (interrupt_twice)
  bool start_checked_ = false;                            ///< start_timeout_s looked at
  std::optional<Clock::time_point> ranks_done_at_;        ///< when every rank had sent its end (launcher running)
  std::optional<int> outlived_code_;  ///< the launcher outlived its ranks and was stopped: their code
  std::vector<ProcessEnd> ends_;
  JobStop stop_;
};

}  // namespace

Expected<RunResult> PosixProcessControl::run(const std::vector<ProcessSpec>& processes, const RunOptions& options) {
  auto& signals = relay();
  signals.drain();
  Supervisor job(options, signals);
  // 1. Spawn every process in one process group (none runs if one cannot start).
  EZPZ_TRY(job.spawn(processes));
  if (options.on_started) {
    options.on_started();
  }
  // 2. Supervise: pass output on, relay signals, reap, enforce the watchdog and the grace
  //    before SIGKILL, until every process has ended.
  const auto supervised = job.supervise();
  // 3. Decide the code from how they ended (pure); anything left in the group is killed and
  //    reaped with the supervisor.
  auto result = decide_result(supervised.ends, supervised.stop);
  result.failed_tail = supervised.failed_tail;
  result.launcher_tail = supervised.launcher_tail;
  result.stopped_at = supervised.stop.at;
  result.blocked = supervised.stop.blocked;
  result.not_started = supervised.stop.not_started;
  return result;
}

}  // namespace ezpz::sys
