// PosixProcessControl::run_child and finish_like: the per-rank shim runs the rank's command as
// its child (not exec), so it can report how the rank ended and label its lines.
#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <memory>
#include <optional>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/job/kill.hpp"
#include "core/launch/rank_channel.hpp"
#include "sys/os/exec.hpp"
#include "sys/os/fd_io.hpp"
#include "sys/os/job_exit.hpp"
#include "sys/os/line_relay.hpp"
#include "sys/os/owned.hpp"
#include "sys/os/signal_relay.hpp"

namespace ezpz::sys {
namespace {

/// In the child, after vfork: tie it to its parent, restore signals and stdio, exec. Only system
/// calls here (it shares the parent's memory until exec; no destructor may run: every pipe end
/// is close-on-exec, so the program inherits only 0-2). `out`/`err`: write ends, or -1 to keep
/// the shim's. Never returns.
[[noreturn]] void exec_child(const Prepared& p, pid_t parent, const sigset_t& ignored, int error_fd, int out, int err) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) {
    ::_exit(128 + SIGKILL);
  }
  reset_child_signals(ignored);
  if (out >= 0) {
    ::dup2(out, 1);
    ::dup2(err, 2);
  }
  ::execvpe(p.argv[0], p.argv.data(), p.envp.data());
  const int e = errno;
  [[maybe_unused]] auto n = ::write(error_fd, &e, sizeof(e));
  ::_exit(exec_failure_code(e));
}

/// Whether a signal the shim got must be passed to its child. The child shares the shim's process
/// group, and launchers signal the group or the whole step: Hydra (killpg), Open MPI (kill of
/// the group), Slurm (every process of the step), all from the shim's parent; a terminal's
/// Ctrl-C reaches the whole foreground group. Those reached the child already: passing them on
/// would deliver them twice. What another process sent to the shim alone (kill PID) is passed.
bool relayed(const Received& r) {
  return r.signo != SIGCHLD && r.sender > 0 && r.sender != ::getppid();
}

using Clock = std::chrono::steady_clock;

/// How long the shim holds a rank's output before it goes to the hub (at most): output shows
/// that much later, in far fewer records.
constexpr auto kFlushDelay = std::chrono::milliseconds(2);
/// How often a rank the console does not show sends its last line (at most).
constexpr auto kProgressEvery = std::chrono::milliseconds(1000);
/// A shim that sent nothing for this long says it is alive (core::kAliveEveryS).
constexpr auto kAliveEvery = std::chrono::milliseconds(static_cast<int>(core::kAliveEveryS * 1000));
/// The most it holds (and reads at once); the link cuts it into the channel's records.
constexpr std::size_t kMaxHeld = 256 * 1024;

/// The shim's child until it ends: its output (to the hub, or whole lines here; a copy in its
/// log files), the signals meant for it, and its owner: when the hub says so, or is gone, or
/// the launcher that started the shim is gone, the child is stopped (SIGTERM, then SIGKILL).
class ChildWatch {
 public:
  ChildWatch(OwnedChild& child, SignalRelay& signals, std::vector<LineStream>& streams, const core::ChildIo& io)
      : child_(child), signals_(signals), streams_(streams), io_(io), link_(io.link), parent_(::getppid()) {}

  /// Its wait status.
  int run() {
    while (true) {
      auto fds = events();
      for (std::size_t k = 0; k < streams_.size(); ++k) {
        if ((fds[k + 2].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
          read_stream(streams_[k]);
        }
      }
      if (flush_at_ && Clock::now() >= *flush_at_) {
        flush();
      }
      if (link_ != nullptr && fds[1].revents != 0) {
        hear();
      }
      if (link_ != nullptr && Clock::now() - sent_at_ >= kAliveEvery) {
        sent_at_ = Clock::now();
        if (!link_->send_alive()) {
          lost_hub();
        }
      }
      for (const auto& r : signals_.drain_senders()) {
        if (relayed(r)) {
          ::kill(child_.pid(), r.signo);
          kill_signal_ = r.value == core::kKillMark && kill_signal_ == 0 ? r.signo : kill_signal_;
        }
      }
      if (::getppid() != parent_) {
        stop();  // the launcher that started us is gone: nobody else will stop the rank
      }
      if (kill_at_ && Clock::now() >= *kill_at_) {
        ::kill(child_.pid(), SIGKILL);
        kill_at_.reset();
      }
      if (const auto status = child_.try_wait()) {
        return *status;
      }
    }
  }

  /// The signal ezpz kill passed on through this shim (0: none).
  [[nodiscard]] int kill_signal() const { return kill_signal_; }

  /// The hub reached after the child started: its output goes there from now on.
  void attach(core::RankLink* link) {
    link_ = link;
    for (auto& s : streams_) {
      s.out_fd = link != nullptr ? -1 : s.out_fd;
      s.whole = link == nullptr;
    }
  }

  /// After the child ended: what is left in its pipes.
  void drain() {
    for (auto& s : streams_) {
      if (!s.fd.valid()) {
        continue;
      }
      ::fcntl(s.fd.get(), F_SETFL, O_NONBLOCK);
      while (read_stream(s)) {
      }
      emit_lines(s, LineEnd::flush);
    }
    flush();
  }

 private:
  std::vector<pollfd> events() const {
    std::vector<pollfd> fds = {{signals_.fd(), POLLIN, 0}, {link_ != nullptr ? link_->fd() : -1, POLLIN, 0}};
    for (const auto& s : streams_) {
      // While output is held, the pipes fill instead of waking us for every write.
      fds.push_back({flush_at_ ? -1 : s.fd.get(), POLLIN, 0});
    }
    // Without the relay's pipe nothing wakes us for SIGCHLD; a parent's death is seen on the
    // relay (PR_SET_PDEATHSIG) or, failing that, within a second.
    int wait_ms = signals_.fd() < 0 ? 100 : 1000;
    for (const auto& at : {kill_at_, flush_at_}) {
      if (at) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*at - Clock::now()).count() + 1;
        wait_ms = static_cast<int>(std::clamp<long long>(left, 0, wait_ms));
      }
    }
    if (::poll(fds.data(), fds.size(), wait_ms) < 0) {
      for (auto& p : fds) {
        p.revents = 0;
      }
    }
    return fds;
  }

  /// One read of a stream: to the hub (or here), its log and its tail. False at its end.
  bool read_stream(LineStream& s) {
    const auto n = ::read(s.fd.get(), buf_.get(), kMaxHeld);
    if (n < 0 && errno == EINTR) {
      return true;
    }
    if (n <= 0) {
      emit_lines(s, LineEnd::flush);
      s.fd.reset();
      return false;
    }
    const std::string_view bytes(buf_.get(), static_cast<std::size_t>(n));
    feed(s, bytes);
    if (link_ != nullptr) {
      // Held a moment (kFlushDelay) or until kMaxHeld: a rank printing line by line (Python with
      // PYTHONUNBUFFERED writes a line in two writes) costs one record, not hundreds.
      auto& box = outbox_[static_cast<std::size_t>(stream_of(s) - 1)];
      box.append(bytes);
      if (!flush_at_) {
        // A rank the console does not show sends only its last line, at most once a second
        // (its first at once: the watchdog hears it has started).
        flush_at_ = io_.console ? Clock::now() + kFlushDelay : std::max(Clock::now(), progress_at_);
      }
      if (box.size() >= kMaxHeld) {
        flush();
      }
    }
    return true;
  }

  /// Send what is held, stdout's then stderr's; the hub gone, it shows here.
  void flush() {
    flush_at_.reset();
    sent_at_ = Clock::now();
    progress_at_ = Clock::now() + kProgressEvery;
    for (std::size_t k = 0; k < outbox_.size() && link_ != nullptr; ++k) {
      const int stream = static_cast<int>(k) + 1;
      if (!outbox_[k].empty() && !(io_.console ? link_->send_output(stream, outbox_[k])
                                               : link_->send_progress(stream, core::last_line(outbox_[k])))) {
        lost_hub();
        return;
      }
      outbox_[k].clear();
    }
  }

  int stream_of(const LineStream& s) const { return &s == &streams_.front() ? 1 : 2; }

  void hear() {
    switch (link_->hear()) {
      case core::RankLink::Heard::nothing:
        break;
      case core::RankLink::Heard::kill:
        ::kill(child_.pid(), SIGKILL);
        break;
      case core::RankLink::Heard::stop:  // ezpz stops the job rank by rank (its launcher would kill them)
        ::kill(child_.pid(), link_->stop_signal());
        break;
      case core::RankLink::Heard::gone:
        lost_hub();
        break;
    }
  }

  /// ezpz is gone (ended or killed): its ranks go too; what they still print shows here.
  void lost_hub() {
    grace_s_ = link_->kill_after();
    link_ = nullptr;
    flush_at_.reset();
    for (std::size_t k = 0; k < streams_.size(); ++k) {
      auto& s = streams_[k];
      s.out_fd = io_.console ? static_cast<int>(k) + 1 : -1;
      s.whole = true;
      s.pending = std::move(outbox_[k]) + s.pending;  // what the hub did not take
      outbox_[k].clear();
      emit_lines(s, LineEnd::whole_lines);
    }
    stop();
  }

  void stop() {
    if (!stopping_) {
      stopping_ = true;
      ::kill(child_.pid(), SIGTERM);
      kill_at_ = Clock::now() + std::chrono::milliseconds(static_cast<long long>(grace_s_ * 1000));
    }
  }

  OwnedChild& child_;
  SignalRelay& signals_;
  std::vector<LineStream>& streams_;
  const core::ChildIo& io_;
  core::RankLink* link_;
  pid_t parent_;
  bool stopping_ = false;
  int kill_signal_ = 0;  ///< what ezpz kill sent through us (kKillMark)
  double grace_s_ = 10;
  std::optional<Clock::time_point> kill_at_;
  // Not zeroed: the kernel maps only the pages a read fills (a quiet rank's shim touches none).
  std::unique_ptr<char[]> buf_ = std::make_unique_for_overwrite<char[]>(kMaxHeld);
  std::array<std::string, 2> outbox_;          ///< stdout's and stderr's bytes not yet sent to the hub
  std::optional<Clock::time_point> flush_at_;  ///< when what is held goes
  Clock::time_point progress_at_;              ///< the earliest a hidden rank's next last line goes
  Clock::time_point sent_at_ = Clock::now();   ///< when the hub last got anything from this shim
};

/// The rank's exit from how it could be run and how it ended.
void record_end(core::ChildExit& out, int exec_errno, int status) {
  out.end_time = wall_clock_seconds();
  out.exec_errno = exec_errno;
  if (exec_errno != 0) {
    out.exit_code = exec_failure_code(exec_errno);
  } else {
    out.signal = status_signal(status);
    out.exit_code = status_code(status);
  }
}

/// The child's two streams: to the hub when there is one (bytes as they come; the hub makes
/// the lines), else here in whole lines; a copy in its log files.
std::vector<LineStream> child_streams(OwnedPipe& out_pipe, OwnedPipe& err_pipe, const core::ChildIo& io) {
  std::vector<LineStream> streams(2);
  streams[0].fd = out_pipe.take_read();
  streams[1].fd = err_pipe.take_read();
  for (int k = 0; k < 2; ++k) {
    auto& s = streams[static_cast<std::size_t>(k)];
    s.out_fd = io.link == nullptr && io.console ? k + 1 : -1;
    s.whole = io.link == nullptr;
    s.label = io.label;
    s.log_path = k == 0 ? io.log_out : io.log_err;
  }
  streams[0].keep_tail = false;  // the last words are stderr's
  return streams;
}

}  // namespace

core::ChildExit PosixProcessControl::run_child(const std::vector<std::string>& argv,
                                               const std::vector<std::pair<std::string, std::string>>& env,
                                               const std::vector<std::string>& unset, const core::ChildIo& io) {
  core::ChildExit out;
  auto& signals = relay();
  // The launcher that started us dying is a SIGTERM we see (then the rank is stopped).
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  const auto prepared = prepare_exec(argv, env, unset);
  OwnedPipe error_pipe, out_pipe, err_pipe;
  if (!error_pipe.open() || !out_pipe.open() || !err_pipe.open()) {
    out.exec_errno = errno;
    out.exit_code = 126;
    return out;
  }
  for (int fd : {out_pipe.read_end(), err_pipe.read_end()}) {
    widen_pipe(fd);  // room for the rank's output while the shim holds some
  }
  // vfork (the parent waits until the child has exec'd: no page tables copied, ~0.1 ms less a
  // rank); signals stay blocked meanwhile so no handler of ours runs in the child.
  const pid_t parent = ::getpid();
  sigset_t all;
  sigset_t before;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &before);
  const pid_t pid = ::vfork();
  if (pid == 0) {
    exec_child(prepared, parent, signals.inherited_ignored(), error_pipe.write_end(), out_pipe.write_end(),
               err_pipe.write_end());
  }
  ::sigprocmask(SIG_SETMASK, &before, nullptr);
  const int fork_errno = errno;
  OwnedChild child(pid);
  error_pipe.close_write();
  auto streams = child_streams(out_pipe, err_pipe, io);
  out.pid = pid;
  int exec_errno = 0;
  if (pid < 0) {
    exec_errno = fork_errno;
  } else if (::read(error_pipe.read_end(), &exec_errno, sizeof(exec_errno)) !=
             static_cast<ssize_t>(sizeof(exec_errno))) {
    exec_errno = 0;
  }
  error_pipe.close_read();
  int status = 0;
  ChildWatch watch(child, signals, streams, io);
  if (exec_errno != 0) {
    (void)child.wait();  // it is ending on its own (127/126)
  } else if (child.owned()) {
    if (io.link == nullptr && io.connect) {
      watch.attach(io.connect());  // while the command starts; its first bytes wait in the pipe
    }
    status = watch.run();
  }
  watch.drain();  // its own children may hold the pipes open: no waiting
  out.last_lines = streams[1].tail.lines();
  out.kill_signal = watch.kill_signal();
  record_end(out, exec_errno, status);
  return out;
}

int PosixProcessControl::finish_like(const core::ChildExit& exit) {
  if (exit.signal <= 0) {
    // A stop signal from here on (the launcher stopping the job) would end the shim by that
    // signal once the relay is gone, not with the command's code, and Hydra takes a rank killed
    // by a signal as its cue to SIGKILL every other rank at once, output unread and TERM
    // handlers cut short: held back, it dies with the shim.
    sigset_t stops;
    sigemptyset(&stops);
    for (int signo : SignalRelay::signals()) {
      sigaddset(&stops, signo);
    }
    ::sigprocmask(SIG_BLOCK, &stops, nullptr);
    return exit.exit_code;
  }
  relay_.reset();  // default dispositions back
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);  // the child already dumped its core, if any
  ::signal(exit.signal, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, exit.signal);
  ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(exit.signal);
  return exit.exit_code;  // a signal whose default is not to end the process
}

}  // namespace ezpz::sys
