#include "sys/os/exec.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sys/os/job_exit.hpp"
#include "sys/os/signal_relay.hpp"

extern char** environ;  // NOLINT: POSIX

namespace ezpz::sys {

PosixProcessControl::PosixProcessControl() = default;

PosixProcessControl::~PosixProcessControl() = default;

SignalRelay& PosixProcessControl::relay() {
  if (!relay_) {
    relay_ = std::make_unique<SignalRelay>();
  }
  return *relay_;
}

void reset_child_signals(const sigset_t& ignored) {
  for (int signo : SignalRelay::signals()) {
    ::signal(signo, sigismember(&ignored, signo) == 1 ? SIG_IGN : SIG_DFL);
  }
  ::signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

double wall_clock_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

Prepared prepare_exec(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& set,
                      const std::vector<std::string>& unset) {
  Prepared p;
  auto overridden = [&](std::string_view entry) {
    auto name = entry.substr(0, entry.find('='));
    return std::any_of(set.begin(), set.end(), [&](const auto& kv) { return kv.first == name; }) ||
           std::any_of(unset.begin(), unset.end(), [&](const auto& n) { return n == name; });
  };
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (!overridden(*e)) {
      p.env_strings.emplace_back(*e);
    }
  }
  for (const auto& [name, value] : set) {
    p.env_strings.push_back(name + "=" + value);
  }
  for (auto& s : p.env_strings) {
    p.envp.push_back(s.data());
  }
  p.envp.push_back(nullptr);
  for (const auto& a : argv) {
    p.argv.push_back(const_cast<char*>(a.c_str()));  // NOLINT: exec's signature
  }
  p.argv.push_back(nullptr);
  return p;
}

int PosixProcessControl::reserve_tcp_port() {
  OwnedFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    return 0;
  }
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||  // NOLINT: sockets API
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {   // NOLINT
    return 0;
  }
  reserved_ports_.push_back(std::move(fd));
  return ntohs(addr.sin_port);
}

bool PosixProcessControl::sleep_unless_interrupted(double seconds) {
  auto& r = relay();
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      return true;
    }
    pollfd p{r.fd(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) > 0) {
      for (int signo : r.drain()) {
        if (signo == SIGINT || signo == SIGTERM || signo == SIGHUP) {
          return false;
        }
      }
    }
  }
}

void exec_started(const Prepared& p, const ChildStart& c, const sigset_t& ignored) {
  ::setpgid(0, c.pgid);
  ::prctl(PR_SET_PDEATHSIG, c.death_signal);
  if (::getppid() != c.parent) {
    ::_exit(128 + c.death_signal);
  }
  reset_child_signals(ignored);
  if (c.in != 0) {
    ::dup2(c.in, 0);
  }
  if (c.out >= 0) {
    ::dup2(c.out, 1);
    ::dup2(c.err, 2);
  }
  ::execvpe(p.argv[0], p.argv.data(), p.envp.data());
  const int e = errno;
  [[maybe_unused]] auto n = ::write(c.error_fd, &e, sizeof(e));
  ::_exit(exec_failure_code(e));
}

}  // namespace ezpz::sys
