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
#include "sys/os/line_relay.hpp"
#include "sys/os/signal_relay.hpp"

namespace ezpz::sys {
namespace {

/// In the child, after vfork: tie it to its parent, restore signals and stdio, exec. Only system
/// calls here (it shares the parent's memory until exec). Never returns.
[[noreturn]] void exec_child(const Prepared& p, pid_t parent, const sigset_t& ignored, int error_fd, const int* out,
                             const int* err) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) {
    ::_exit(128 + SIGKILL);
  }
  reset_child_signals(ignored);
  if (out != nullptr) {
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
  }
  ::execvpe(p.argv[0], p.argv.data(), p.envp.data());
  const int e = errno;
  [[maybe_unused]] auto n = ::write(error_fd, &e, sizeof(e));
  ::_exit(e == ENOENT ? 127 : 126);
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
int supervise(pid_t pid, SignalRelay& signals, std::vector<LineStream>& streams) {
  while (true) {
    std::vector<pollfd> fds = {{signals.fd(), POLLIN, 0}};
    for (const auto& s : streams) {
      fds.push_back({s.fd, POLLIN, 0});
    }
    // Without the relay's pipe (none could be made) nothing wakes us for SIGCHLD: look often.
    if (::poll(fds.data(), fds.size(), signals.fd() < 0 ? 100 : -1) < 0 && errno != EINTR) {
      break;
    }
    for (std::size_t k = 1; k < fds.size(); ++k) {
      auto& s = streams[k - 1];
      if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) != 0 && pump_lines(s) == Pumped::ended) {
        ::close(s.fd);
        s.fd = -1;
      }
    }
    std::erase_if(streams, [](const LineStream& s) { return s.fd < 0; });
    for (const auto& r : signals.drain_senders()) {
      if (relayed(r)) {
        ::kill(pid, r.signo);
      }
    }
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      return status;
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

core::ChildExit PosixProcessControl::run_child(const std::vector<std::string>& argv,
                                               const std::vector<std::pair<std::string, std::string>>& env,
                                               const std::string& label) {
  core::ChildExit out;
  auto& signals = relay();
  const auto prepared = prepare_exec(argv, env, {});
  int error_pipe[2];
  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  const bool labelled = !label.empty();
  if (::pipe2(error_pipe, O_CLOEXEC) != 0 ||
      (labelled && (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0))) {
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
    exec_child(prepared, parent, signals.inherited_ignored(), error_pipe[1], labelled ? out_pipe : nullptr,
               labelled ? err_pipe : nullptr);
  }
  ::sigprocmask(SIG_SETMASK, &before, nullptr);
  ::close(error_pipe[1]);
  std::vector<LineStream> streams;
  if (labelled) {
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    streams = {{out_pipe[0], 1, label, {}}, {err_pipe[0], 2, label, {}}};
  }
  out.pid = pid;
  int exec_errno = 0;
  if (pid < 0) {
    exec_errno = errno;
  } else if (::read(error_pipe[0], &exec_errno, sizeof(exec_errno)) != static_cast<ssize_t>(sizeof(exec_errno))) {
    exec_errno = 0;
  }
  ::close(error_pipe[0]);
  int status = 0;
  if (pid > 0) {
    status = exec_errno != 0 ? 0 : supervise(pid, signals, streams);
    if (exec_errno != 0) {
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  for (auto& s : streams) {
    drain_lines(s);  // its own children may hold the pipes open: no waiting
  }
  out.end_time = wall_clock_seconds();
  out.exec_errno = exec_errno;
  if (exec_errno != 0) {
    out.exit_code = exec_errno == ENOENT ? 127 : 126;
  } else if (WIFSIGNALED(status)) {
    out.signal = WTERMSIG(status);
    out.exit_code = 128 + out.signal;
  } else {
    out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  }
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
