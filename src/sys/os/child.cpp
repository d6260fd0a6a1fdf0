// PosixProcessControl::run_child and finish_like: the per-rank shim runs the rank's command as
// its child (not exec), so it can report how the rank ended and label its lines.
#include <algorithm>
#include <cerrno>
#include <csignal>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

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

/// Until the child ends: pass it the signals meant for it, pass its output on in whole lines.
/// Its wait status.
int supervise(OwnedChild& child, SignalRelay& signals, std::vector<LineStream>& streams) {
  while (true) {
    std::vector<pollfd> fds = {{signals.fd(), POLLIN, 0}};
    for (const auto& s : streams) {
      fds.push_back({s.fd.get(), POLLIN, 0});
    }
    // Without the relay's pipe (none could be made) nothing wakes us for SIGCHLD: look often.
    if (::poll(fds.data(), fds.size(), signals.fd() < 0 ? 100 : -1) < 0 && errno != EINTR) {
      break;
    }
    for (std::size_t k = 1; k < fds.size(); ++k) {
      if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        (void)pump_lines(streams[k - 1]);  // at its end, the stream's descriptor is closed
      }
    }
    std::erase_if(streams, [](const LineStream& s) { return !s.fd.valid(); });
    for (const auto& r : signals.drain_senders()) {
      if (relayed(r)) {
        ::kill(child.pid(), r.signo);
      }
    }
    if (const auto status = child.try_wait()) {
      return *status;
    }
  }
  return child.wait().value_or(0);
}

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

}  // namespace

core::ChildExit PosixProcessControl::run_child(const std::vector<std::string>& argv,
                                               const std::vector<std::pair<std::string, std::string>>& env,
                                               const std::string& label) {
  core::ChildExit out;
  auto& signals = relay();
  const auto prepared = prepare_exec(argv, env, {});
  OwnedPipe error_pipe, out_pipe, err_pipe;
  const bool labelled = !label.empty();
  if (!error_pipe.open() || (labelled && (!out_pipe.open() || !err_pipe.open()))) {
    out.exec_errno = errno;
    out.exit_code = 126;
    return out;
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
  std::vector<LineStream> streams;
  if (labelled) {
    streams.push_back({out_pipe.take_read(), 1, label, {}});
    streams.push_back({err_pipe.take_read(), 2, label, {}});
  }
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
  if (exec_errno != 0) {
    (void)child.wait();  // it is ending on its own (127/126)
  } else if (child.owned()) {
    status = supervise(child, signals, streams);
  }
  for (auto& s : streams) {
    drain_lines(s);  // its own children may hold the pipes open: no waiting
  }
  record_end(out, exec_errno, status);
  return out;
}

int PosixProcessControl::finish_like(const core::ChildExit& exit) {
  if (exit.signal <= 0) {
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
