#include "sys/exec.hpp"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sys/signal_relay.hpp"

namespace ezpz::sys {

PosixProcessControl::PosixProcessControl() = default;

PosixProcessControl::~PosixProcessControl() {
  for (int fd : reserved_ports_) {
    ::close(fd);
  }
}

SignalRelay& PosixProcessControl::relay() {
  if (!relay_) {
    relay_ = std::make_unique<SignalRelay>();
  }
  return *relay_;
}

Error PosixProcessControl::exec_replace(const std::vector<std::string>& argv,
                                        const std::vector<std::pair<std::string, std::string>>& env) {
  if (argv.empty()) {
    return Error{ExitCode::internal, "exec_replace: empty argv"};
  }
  relay_.reset();  // the new program starts with default signal handling
  for (const auto& [name, value] : env) {
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));  // NOLINT: execvp's signature
  }
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  const int err = errno;
  if (err == ENOENT) {
    return Error{ExitCode::not_found, argv[0] + ": command not found: load the module that provides it or check PATH"};
  }
  return Error{ExitCode::cannot_execute, "cannot execute " + argv[0] + ": " + std::strerror(err)};
}

int PosixProcessControl::reserve_tcp_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return 0;
  }
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||  // NOLINT: sockets API
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {   // NOLINT
    ::close(fd);
    return 0;
  }
  reserved_ports_.push_back(fd);
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

}  // namespace ezpz::sys
