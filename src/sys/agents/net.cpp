#include "sys/agents/net.hpp"

#include <cerrno>
#include <cstring>
#include <utility>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

namespace ezpz::sys {

std::optional<Listener> listen_any(std::string& why) {
  return listen_on("", why);
}

std::optional<Listener> listen_on(const std::string& ipv4, std::string& why) {
  Listener l;
  l.fd.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (ipv4.empty() || ::inet_pton(AF_INET, ipv4.c_str(), &a.sin_addr) != 1) {
    a.sin_addr.s_addr = htonl(INADDR_ANY);
  }
  socklen_t len = sizeof(a);
  if (!l.fd.valid() || ::bind(l.fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::listen(l.fd.get(), SOMAXCONN) != 0 || ::getsockname(l.fd.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    why = std::string("cannot listen on a TCP port: ") + std::strerror(errno);
    return std::nullopt;
  }
  l.port = ntohs(a.sin_port);
  return l;
}

namespace {

void tune(int fd) {
  const int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // result lines go at once
}

}  // namespace

OwnedFd begin_connect(const std::string& address, std::string& why) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    why = "not an address (host:port): " + address;
    return OwnedFd();
  }
  const std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    why = "cannot resolve " + host + ": " + ::gai_strerror(rc);
    return OwnedFd();
  }
  OwnedFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  int err = errno;
  if (fd.valid()) {
    tune(fd.get());
    err = ::connect(fd.get(), found->ai_addr, found->ai_addrlen) == 0 || errno == EINPROGRESS ? 0 : errno;
  }
  ::freeaddrinfo(found);
  if (!fd.valid() || err != 0) {
    why = connect_error(address, err);
    fd.reset();
  }
  return fd;
}

int wait_connected(int fd, int timeout_ms) {
  pollfd p{fd, POLLOUT, 0};
  int ready;
  while ((ready = ::poll(&p, 1, timeout_ms)) < 0 && errno == EINTR) {
  }
  int err = ready == 0 ? ETIMEDOUT : 0;
  socklen_t len = sizeof(err);
  if (ready > 0) {
    (void)::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  }
  return err;
}

std::string connect_error(const std::string& address, int err) {
  return "cannot connect to " + address + ": " + std::strerror(err);
}

OwnedFd connect_to(const std::string& address, int timeout_ms, std::string& why) {
  auto fd = begin_connect(address, why);
  if (fd.valid()) {
    if (const int err = wait_connected(fd.get(), timeout_ms); err != 0) {
      why = connect_error(address, err);
      fd.reset();
    }
  }
  return fd;
}

OwnedFd accept_one(int listener) {
  OwnedFd fd(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (fd.valid()) {
    tune(fd.get());
  }
  return fd;
}

void keep_alive(int fd) {
  const int on = 1;
  const int idle = 30;
  const int interval = 10;
  const int count = 3;
  (void)::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
}

namespace {

/// The IPv4 address getpeername or getsockname (`get`) gives for `fd`; "" when none.
std::string address_of(int fd, int (*get)(int, sockaddr*, socklen_t*)) {
  sockaddr_in a{};
  socklen_t len = sizeof(a);
  char text[INET_ADDRSTRLEN] = {};
  if (get(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 || a.sin_family != AF_INET ||
      ::inet_ntop(AF_INET, &a.sin_addr, text, sizeof(text)) == nullptr) {
    return {};
  }
  return text;
}

}  // namespace

std::string peer_address(int fd) {
  return address_of(fd, ::getpeername);
}

std::string local_address(int fd) {
  return address_of(fd, ::getsockname);
}

Handshakes::Handshakes(const Secret& secret, Clock::duration wait, std::size_t limit, std::function<void(int)> watch,
                       std::function<void(int)> unwatch)
    : secret_(secret), wait_(wait), limit_(limit), watch_(std::move(watch)), unwatch_(std::move(unwatch)) {}

bool Handshakes::accept_all(int listener, std::vector<SecureChannel>& done) {
  while (true) {
    const auto now = Clock::now();
    if (now < rest_until_) {
      return false;
    }
    if (pending_.size() >= limit_ && !evict(now)) {
      rest_until_ = now + kRest;
      return false;
    }
    OwnedFd fd = accept_one(listener);
    if (!fd.valid()) {
      const int err = errno;
      const bool short_of = err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
      if (short_of && !evict(now)) {
        rest_until_ = now + kRest;  // no descriptor to take one with: the others keep theirs
        return false;
      }
      if (short_of || err == EINTR || err == ECONNABORTED || err == EPROTO || err == ENETDOWN || err == ENETUNREACH ||
          err == EHOSTDOWN || err == EHOSTUNREACH || err == ENONET || err == EOPNOTSUPP || err == ENOPROTOOPT) {
        continue;  // room made, or one connection's own trouble: the next one
      }
      return true;  // none waiting
    }
    const int key = fd.get();
    if (watch_) {
      watch_(key);
    }
    pending_.try_emplace(key, Pending{SecureChannel::Accepting(std::move(fd), secret_), now + wait_});
    order_.emplace_back(now + wait_, key);
    if (auto ch = advance(key)) {  // its hello may be here already
      done.push_back(std::move(*ch));
    }
  }
}

std::optional<SecureChannel> Handshakes::advance(int fd) {
  const auto it = pending_.find(fd);
  if (it == pending_.end()) {
    return std::nullopt;
  }
  const auto step = it->second.accepting.step();
  if (step == SecureChannel::Accepting::Step::done) {
    auto ch = it->second.accepting.take();
    pending_.erase(it);
    return ch;
  }
  if (step == SecureChannel::Accepting::Step::failed) {
    drop(it);  // not a client of this run: nothing said
  }
  return std::nullopt;
}

Handshakes::Map::iterator Handshakes::oldest() {
  while (!order_.empty()) {
    const auto [deadline, fd] = order_.front();
    const auto it = pending_.find(fd);
    if (it != pending_.end() && it->second.deadline == deadline) {
      return it;
    }
    order_.pop_front();  // done or dropped since (its descriptor may serve another by now)
  }
  return pending_.end();
}

bool Handshakes::evict(Clock::time_point now) {
  const auto it = oldest();
  if (it == pending_.end() || it->second.deadline - wait_ + kEvictAfter > now) {
    return false;
  }
  order_.pop_front();
  drop(it);
  return true;
}

Handshakes::Clock::time_point Handshakes::drop_late(Clock::time_point now) {
  for (auto it = oldest(); it != pending_.end(); it = oldest()) {
    if (it->second.deadline > now) {
      return it->second.deadline;
    }
    order_.pop_front();
    drop(it);
  }
  return Clock::time_point::max();
}

void Handshakes::add_fds(std::vector<pollfd>& fds) const {
  for (const auto& [fd, p] : pending_) {
    fds.push_back({fd, POLLIN, 0});
  }
}

void Handshakes::drop(Map::iterator it) {
  if (unwatch_) {
    unwatch_(it->first);
  }
  pending_.erase(it);
}

}  // namespace ezpz::sys
