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

#include "core/hostlist.hpp"
#include "core/strings.hpp"
#include "sys/os/fd_io.hpp"
#include "sys/remote/ssh_client.hpp"

namespace ezpz::sys {
RemoteProcess start_remote(const std::string& host, const std::string& command, const core::BroadcastSpec& spec,
                           const std::string& report_as, bool with_stdin, bool gated) {
  RemoteProcess p;
  int to_child[2] = {-1, -1};
  int from_child[2];
  if (::pipe2(from_child, O_CLOEXEC) != 0) {
    return p;
  }
  if (with_stdin ? ::pipe2(to_child, O_CLOEXEC) != 0 : (to_child[0] = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
    ::close(from_child[0]);
    ::close(from_child[1]);
    return p;
  }
  std::vector<std::string> argv = spec.ssh_command;
  if (argv.empty()) {
    argv = {"ezpz", std::string(kSshStdio), report_as, spec.accept_new_host_keys ? "1" : "0", spec.user};
  }
  const int self = spec.ssh_command.empty() ? open_self() : -1;
  if (spec.ssh_command.empty() && self < 0) {
    ::close(from_child[0]);
    ::close(from_child[1]);
    ::close(to_child[0]);
    if (to_child[1] >= 0) {
      ::close(to_child[1]);
    }
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
  p.pid = ::fork();
  if (p.pid == 0) {
    move_fd(to_child[0], 0);
    move_fd(from_child[1], 1);
    if (gated && with_stdin) {
      char gate = 0;
      ssize_t got;
      while ((got = ::read(0, &gate, 1)) < 0 && errno == EINTR) {
      }
      if (got != 1) {
        ::_exit(0);  // never opened: nothing was started
      }
    }
    if (!refusal.empty()) {
      (void)write_all(1, refusal.data(), refusal.size());
      ::_exit(255);
    }
    // Both transports exec: a forked copy of a multithreaded process may only call what is
    // async-signal-safe (another thread could hold the allocator's lock), so the built-in
    // one runs in a fresh image of this binary (ezpz __ssh-stdio, see ssh_stdio_main).
    ::signal(SIGPIPE, SIG_DFL);
    if (self >= 0) {
      exec_self(self, args.data());
    } else {
      cloexec_inherited();
      ::execvp(args[0], args.data());  // glibc's needs no allocation
    }
    ::_exit(127);
  }
  if (self >= 0) {
    ::close(self);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  p.in = with_stdin ? to_child[1] : -1;
  p.out = from_child[0];
  if (p.pid < 0) {
    if (p.in >= 0) {
      ::close(p.in);
    }
    ::close(p.out);
    p = RemoteProcess{};
  }
  return p;
}

int ssh_stdio_main(int argc, char** argv) {
  if (argc != 5) {
    std::fputs("ezpz __ssh-stdio: internal use (REPORT_AS ACCEPT_NEW USER HOST COMMAND)\n", stderr);
    return 2;
  }
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    ::signal(sig, SIG_DFL);
  }
  sigset_t none;  // a mask inherited from the thread that started us must not keep SIGTERM out
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  std::string error;
  const int rc = ssh_run_stdio(argv[3], argv[4], SshOptions{std::string_view(argv[1]) == "1", argv[2]}, error);
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

int SshTransport::child_main(const std::vector<std::string>& args) {
  std::vector<std::string> words(args);
  std::vector<char*> argv;
  for (auto& w : words) {
    argv.push_back(w.data());
  }
  argv.push_back(nullptr);
  return ssh_stdio_main(static_cast<int>(words.size()), argv.data());
}

}  // namespace ezpz::sys
