#include "sys/remote/remote.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <vector>

#include <fcntl.h>
#include <nettle/sha2.h>
#include <poll.h>
#include <unistd.h>

#include "core/base/log.hpp"
#include "core/job/hostlist.hpp"
#include "core/yeet/outcome.hpp"
#include "sys/os/argv.hpp"
#include "sys/os/fd_io.hpp"
#include "sys/remote/ssh_client.hpp"
#include "sys/remote/ssh_tcp.hpp"

namespace ezpz::sys {
namespace {

std::string_view carry_word(SshCarry carry) {
  switch (carry) {
    case SshCarry::tcp_sealed:
      return "tcp";
    case SshCarry::tcp_clear:
      return "tcp-clear";
    case SshCarry::channel:
      break;
  }
  return "channel";
}

}  // namespace

RemoteProcess start_remote(const std::string& host, const std::string& command, const core::ReachSpec& spec,
                           const std::string& report_as, core::Stdin in, SshCarry carry) {
  const bool with_stdin = in != core::Stdin::none;
  const bool gated = in == core::Stdin::gated_pipe;
  RemoteProcess p;
  OwnedPipe from_child;
  OwnedPipe to_child;  // with stdin: a pipe; without: /dev/null as its read end
  OwnedFd null_in;
  if (!from_child.open() || (with_stdin ? !to_child.open() : !(null_in = open_null(O_RDONLY)).valid())) {
    return p;
  }
  if (with_stdin) {
    widen_pipe(to_child.write_end());  // a relay's stream
  }

  const int child_in = with_stdin ? to_child.read_end() : null_in.get();
  std::vector<std::string> argv = spec.ssh_command;
  if (argv.empty()) {
    argv = {"ezpz",    std::string(kSshStdio),        report_as, spec.accept_new_host_keys ? "1" : "0",
            spec.user, std::string(carry_word(carry))};
  }
  OwnedFd self;
  if (spec.ssh_command.empty() && !(self = open_self_owned()).valid()) {
    return p;
  }
  argv.push_back(host);
  argv.push_back(command);
  std::vector<char*> args;
  for (auto& a : argv) {
    args.push_back(a.data());
  }
  args.push_back(nullptr);
  // Never hand ssh a host name it would read as an option (-oProxyCommand=...): the child
  // reports the refusal as its result line instead (prepared here: no allocation after fork).
  std::string refusal;
  if (auto ok = core::check_remote_host(host); !ok) {
    core::NodeResult r;
    r.host = report_as;
    r.error = ok.error().message;
    refusal = core::encode_result(r) + "\n";
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    // The child until exec: async-signal-safe calls only, and no destructor runs (the owners
    // above belong to the parent; every descriptor is close-on-exec but 0-2).
    move_fd(child_in, 0);
    move_fd(from_child.write_end(), 1);
    if (gated && with_stdin && !wait_at_gate()) {
      ::_exit(0);  // never opened: nothing was started
    }
    if (!refusal.empty()) {
      (void)write_all(1, refusal.data(), refusal.size());
      ::_exit(255);
    }
    // Both transports exec: a forked copy of a multithreaded process may only call what is
    // async-signal-safe (another thread could hold the allocator's lock), so the built-in
    // one runs in a fresh image of this binary (ezpz __ssh-stdio, see ssh_stdio_main).
    ::signal(SIGPIPE, SIG_DFL);
    if (self.valid()) {
      exec_self(self.get(), args.data());
    } else {
      cloexec_inherited();
      ::execvp(args[0], args.data());  // glibc's needs no allocation
    }
    ::_exit(127);
  }
  if (pid < 0) {
    return p;  // every end closes with its owner
  }
  // The caller owns the rest (RemoteProcess: closes `in` and `out`, waits for `pid`).
  p.pid = pid;
  p.in = with_stdin ? to_child.take_write().release() : -1;
  p.out = from_child.take_read().release();
  return p;
}

int ssh_stdio_main(int argc, char** argv) {
  const std::string_view carry = argc == 6 ? argv[3] : "";
  if (carry != "channel" && carry != "tcp" && carry != "tcp-clear") {
    log::line("ezpz __ssh-stdio: internal use (REPORT_AS ACCEPT_NEW USER CARRY HOST COMMAND)");
    return 2;
  }
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    ::signal(sig, SIG_DFL);
  }
  sigset_t none;  // a mask inherited from the thread that started us must not keep SIGTERM out
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  std::string error;
  SshOptions options{std::string_view(argv[1]) == "1", argv[2]};
  options.carry = carry == "tcp"         ? SshCarry::tcp_sealed
                  : carry == "tcp-clear" ? SshCarry::tcp_clear
                                         : SshCarry::channel;
  const int rc = ssh_run_stdio(argv[4], argv[5], options, error);
  if (rc == 255 && !error.empty()) {
    core::NodeResult r;
    r.host = argv[0];
    r.error = error;
    const auto line = core::encode_result(r) + "\n";
    (void)write_all(1, line.data(), line.size());
  }
  return rc;
}

}  // namespace ezpz::sys

namespace ezpz::sys {

core::RemoteProcess SshTransport::start(const std::string& host, const core::RemoteCommand& command,
                                        const core::ReachSpec& spec, const std::string& report_as) {
  if (command.load != core::StdinLoad::stream || command.in == core::Stdin::none || !spec.ssh_command.empty()) {
    return start_remote(host, core::remote_command(spec, command.args, command.ship), spec, report_as, command.in);
  }
  std::vector<std::string> args = {std::string(kSshTcpRow)};
  args.insert(args.end(), command.args.begin(), command.args.end());
  return start_remote(host, core::remote_command(spec, args, command.ship), spec, report_as, command.in,
                      spec.encrypt ? SshCarry::tcp_sealed : SshCarry::tcp_clear);
}

int SshTransport::child_main(core::TransportKind /*kind*/, const std::vector<std::string>& args) {
  return call_main(args, ssh_stdio_main);
}

int SshTransport::node_main(core::TransportKind /*kind*/, const std::vector<std::string>& args) {
  return ssh_tcp_main(args);
}

}  // namespace ezpz::sys
