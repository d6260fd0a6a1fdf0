// PosixProcessControl::run: start a job's processes in one process group, relay
// signals to it, label and watch its output, and collect exit codes.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sys/exec.hpp"
#include "sys/fd_io.hpp"
#include "sys/line_relay.hpp"
#include "sys/signal_relay.hpp"

namespace ezpz::sys {
namespace {

using Clock = std::chrono::steady_clock;
using core::ProcessSpec;
using core::RunOptions;
using core::RunResult;

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

int status_code(int status) {
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status);
  }
  if (WIFSIGNALED(status)) {
    return 128 + WTERMSIG(status);
  }
  return 1;
}

std::string describe(int code) {
  if (code > 128 && code < 128 + 65) {
    const char* name = sigabbrev_np(code - 128);
    return "was killed by signal " + std::to_string(code - 128) +
           (name != nullptr ? std::string(" (SIG") + name + ")" : "");
  }
  return "exited with code " + std::to_string(code);
}

}  // namespace

Expected<RunResult> PosixProcessControl::run(const std::vector<ProcessSpec>& processes, const RunOptions& options) {
  auto& signals = relay();
  signals.drain();
  const bool capture = options.label || options.whole_lines || options.timeout_s > 0;
  const bool stdin_is_tty = ::isatty(0) == 1;
  const pid_t self = ::getpid();
  const int death_signal = options.is_launcher ? SIGTERM : SIGKILL;

  struct Child {
    pid_t pid = -1;
    bool done = false;
    int code = 0;
  };
  std::vector<Child> children(processes.size());
  std::vector<LineStream> streams;
  pid_t pgid = 0;
  int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);

  auto kill_group = [&](int signo) {
    if (pgid > 0) {
      ::kill(-pgid, signo);
    }
  };

  for (std::size_t i = 0; i < processes.size(); ++i) {
    const auto& spec = processes[i];
    auto prepared = prepare_exec(spec.argv, spec.set, spec.unset);
    int out_pipe[2] = {-1, -1};
    int err_pipe[2] = {-1, -1};
    if (capture && (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)) {
      kill_group(SIGKILL);
      return failure(std::string("cannot create pipes: ") + std::strerror(errno));
    }
    int exec_error[2];
    if (::pipe2(exec_error, O_CLOEXEC) != 0) {
      kill_group(SIGKILL);
      return failure(std::string("cannot create a pipe: ") + std::strerror(errno));
    }
    // stdin: the first process keeps a non-terminal stdin; a terminal would stop a
    // background process group with SIGTTIN, so it gets /dev/null like the rest.
    const int in_fd = (i == 0 && !stdin_is_tty) ? 0 : devnull;
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, pgid);
      ::prctl(PR_SET_PDEATHSIG, death_signal);
      if (::getppid() != self) {
        ::_exit(128 + death_signal);
      }
      reset_child_signals();
      if (in_fd != 0) {
        ::dup2(in_fd, 0);
      }
      if (capture) {
        ::dup2(out_pipe[1], 1);
        ::dup2(err_pipe[1], 2);
      }
      ::execvpe(prepared.argv[0], prepared.argv.data(), prepared.envp.data());
      int err = errno;
      [[maybe_unused]] auto n = ::write(exec_error[1], &err, sizeof(err));
      ::_exit(err == ENOENT ? 127 : 126);
    }
    ::close(exec_error[1]);
    if (pid < 0) {
      ::close(exec_error[0]);
      kill_group(SIGKILL);
      return failure(std::string("cannot fork: ") + std::strerror(errno));
    }
    if (pgid == 0) {
      pgid = pid;
    }
    ::setpgid(pid, pgid);  // also here, so the group exists before we signal it
    children[i].pid = pid;
    int err = 0;
    auto n = ::read(exec_error[0], &err, sizeof(err));
    ::close(exec_error[0]);
    if (capture) {
      ::close(out_pipe[1]);
      ::close(err_pipe[1]);
      const std::string label = options.label ? spec.label : "";
      streams.push_back({out_pipe[0], 1, label, {}});
      streams.push_back({err_pipe[0], 2, label, {}});
    }
    if (n == static_cast<ssize_t>(sizeof(err))) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      kill_group(SIGKILL);
      for (auto& c : children) {
        if (c.pid > 0 && c.pid != pid) {
          ::waitpid(c.pid, &status, 0);
        }
      }
      for (auto& s : streams) {
        ::close(s.fd);
      }
      ::close(devnull);
      const auto& prog = spec.argv.front();
      if (err == ENOENT) {
        return Error{ExitCode::not_found, prog + ": command not found: check the name, PATH or the loaded modules"};
      }
      return Error{ExitCode::cannot_execute, "cannot execute " + prog + ": " + std::strerror(err)};
    }
  }
  ::close(devnull);

  RunResult result;
  auto last_output = Clock::now();
  std::optional<Clock::time_point> kill_deadline;
  int sigints = 0;
  std::size_t running = children.size();
  auto name_of = [&](std::size_t i) {
    return i < options.names.size() ? options.names[i] : "process " + std::to_string(i);
  };
  auto start_stopping = [&](int signo) {
    kill_group(signo);
    if (!kill_deadline) {
      kill_deadline = Clock::now() + seconds(options.kill_after_s);
    }
  };

  while (running > 0) {
    std::vector<pollfd> fds;
    fds.push_back({signals.fd(), POLLIN, 0});
    for (const auto& s : streams) {
      fds.push_back({s.fd, POLLIN, 0});
    }
    int wait_ms = -1;
    auto now = Clock::now();
    auto until = [&](Clock::time_point t) {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count() + 1;
      wait_ms = wait_ms < 0 ? static_cast<int>(std::max<long>(ms, 0))
                            : std::min(wait_ms, static_cast<int>(std::max<long>(ms, 0)));
    };
    if (kill_deadline) {
      until(*kill_deadline);
    }
    if (options.timeout_s > 0 && !result.timed_out) {
      until(last_output + seconds(options.timeout_s));
    }
    ::poll(fds.data(), fds.size(), wait_ms);
    now = Clock::now();

    // Output first, so the last lines of a failing rank appear before our notice.
    for (std::size_t k = 1; k < fds.size(); ++k) {
      if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
        continue;
      }
      auto& s = streams[k - 1];
      if (pump_lines(s)) {
        last_output = now;
      } else {
        ::close(s.fd);
        s.fd = -1;
      }
    }
    streams.erase(std::remove_if(streams.begin(), streams.end(), [](const LineStream& s) { return s.fd < 0; }),
                  streams.end());

    for (int signo : signals.drain()) {
      if (signo == SIGCHLD) {
        continue;  // reaped below
      }
      if (signo == SIGINT && ++sigints >= 2) {
        if (options.notice) {
          options.notice("second interrupt: killing the job");
        }
        kill_group(SIGKILL);
      } else if (signo == SIGINT && running > 0 && options.notice) {
        options.notice("SIGINT sent to " + options.stop_what + ": waiting up to " +
                       std::to_string(static_cast<long>(options.kill_after_s)) +
                       " s for it to stop, then SIGKILL (Ctrl-C again to kill now)");
        result.signal = result.signal != 0 ? result.signal : signo;
        start_stopping(signo);
      } else if (signo == SIGUSR1 || signo == SIGUSR2) {
        kill_group(signo);
      } else {
        result.signal = result.signal != 0 ? result.signal : signo;
        start_stopping(signo);
      }
    }

    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      auto it = std::find_if(children.begin(), children.end(), [&](const Child& c) { return c.pid == pid; });
      if (it == children.end() || it->done) {
        continue;
      }
      it->done = true;
      it->code = status_code(status);
      --running;
      const auto index = static_cast<std::size_t>(it - children.begin());
      if (it->code != 0 && result.failed < 0) {
        result.failed = static_cast<int>(index);
        result.failed_code = it->code;
        result.failed_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        result.failed_time = wall_clock_seconds();
        if (options.stop_on_failure && running > 0 && result.signal == 0 && !result.timed_out) {
          if (options.notice) {
            options.notice(name_of(index) + " " + describe(it->code) + ": stopping the other " +
                           std::to_string(running) + (running == 1 ? " process" : " processes"));
          }
          start_stopping(SIGTERM);
        }
      }
    }

    if (options.timeout_s > 0 && !result.timed_out && running > 0 && now - last_output >= seconds(options.timeout_s)) {
      result.timed_out = true;
      if (options.notice) {
        options.notice("no output for " + std::to_string(static_cast<long>(options.timeout_s)) +
                       " s: stopping the job (--timeout)");
      }
      start_stopping(SIGTERM);
    }
    if (kill_deadline && now >= *kill_deadline && running > 0) {
      if (options.notice) {
        options.notice("still running " + std::to_string(static_cast<long>(options.kill_after_s)) +
                       " s after the stop signal: sending SIGKILL");
      }
      kill_group(SIGKILL);
      kill_deadline = now + std::chrono::hours(24);
    }
  }

  // Whatever the processes left in their pipes, then anything still in the group.
  for (auto& s : streams) {
    ::fcntl(s.fd, F_SETFL, O_NONBLOCK);
    char buf[65536];
    ssize_t n;
    while ((n = ::read(s.fd, buf, sizeof(buf))) > 0) {
      s.pending.append(buf, static_cast<std::size_t>(n));
    }
    emit_lines(s, true);
    ::close(s.fd);
  }
  kill_group(SIGKILL);

  if (result.timed_out) {
    result.exit_code = static_cast<int>(ExitCode::timeout);
  } else if (result.signal != 0) {
    result.exit_code = 128 + result.signal;
  } else if (result.failed >= 0) {
    result.exit_code = result.failed_code;
  } else {
    result.exit_code = 0;
  }
  return result;
}

}  // namespace ezpz::sys
