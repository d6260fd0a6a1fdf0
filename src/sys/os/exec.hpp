// Starting and supervising programs for real.
#pragma once

#include <csignal>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "core/ports/process.hpp"
#include "sys/os/fd_io.hpp"

namespace ezpz::sys {

class SignalRelay;

/// argv and envp as C arrays, built before fork (nothing may allocate after it): this
/// process's environment with `set` added or replaced and `unset` removed.
struct Prepared {
  std::vector<std::string> env_strings;
  std::vector<char*> argv;
  std::vector<char*> envp;
};
/// In a child after fork or vfork, before exec: default dispositions for the signals ezpz relays
/// (ignored for those in `ignored`: what ezpz itself inherited ignored, e.g. under nohup) and
/// SIGPIPE, and no signal blocked. System calls only.
void reset_child_signals(const sigset_t& ignored);

/// The wall clock, seconds since the epoch.
[[nodiscard]] double wall_clock_seconds();

[[nodiscard]] Prepared prepare_exec(const std::vector<std::string>& argv,
                                    const std::vector<std::pair<std::string, std::string>>& set,
                                    const std::vector<std::string>& unset);

/// What a child of a job needs between vfork and exec, fixed before vfork.
struct ChildStart {
  pid_t parent;
  pid_t pgid;        ///< the job's process group (0: the child starts it)
  int death_signal;  ///< what it gets when ezpz dies
  int in;            ///< its stdin
  int out, err;      ///< its stdout and stderr (-1: ezpz's own)
  int error_fd;      ///< where exec's errno goes when exec fails
};
/// In the child, after vfork: it shares ezpz's memory until exec, so system calls only and no
/// destructor runs (every end is close-on-exec: the program inherits only 0-2). Never returns.
[[noreturn]] void exec_started(const Prepared& p, const ChildStart& c, const sigset_t& ignored);

class PosixProcessControl final : public core::JobControl, public core::ProcessTable {
 public:
  PosixProcessControl();
  ~PosixProcessControl() override;

  [[nodiscard]] core::ChildExit run_child(const std::vector<std::string>& argv,
                                          const std::vector<std::pair<std::string, std::string>>& env,
                                          const std::vector<std::string>& unset, const core::ChildIo& io) override;
  [[nodiscard]] int finish_like(const core::ChildExit& exit) override;
  [[nodiscard]] Expected<core::RunResult> run(const std::vector<core::ProcessSpec>& processes,
                                              const core::RunOptions& options) override;
  [[nodiscard]] int reserve_tcp_port() override;
  [[nodiscard]] bool sleep_unless_interrupted(double seconds) override;
  [[nodiscard]] std::vector<core::ProcessInfo> job_processes() override;
  [[nodiscard]] std::vector<int> self_and_ancestors() override;
  bool send_signal(int pid, int sig) override;
  bool signal_shim(int shim, int sig) override;
  [[nodiscard]] bool alive(int pid) override;

 private:
  SignalRelay& relay();

  std::unique_ptr<SignalRelay> relay_;   // installed on first use, kept across retries
  std::vector<OwnedFd> reserved_ports_;  // sockets held open until exit
  std::map<int, OwnedFd> pidfds_;        // job_processes' finds, by PID: signalled through these
  std::map<int, std::string> started_;   // ...and their start times (where pidfd_open is missing)
};

}  // namespace ezpz::sys
