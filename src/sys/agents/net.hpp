// TCP for the launcher transport: a listener on an ephemeral port, a connection with a deadline,
// the handshakes of the connections a listener takes, many at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <poll.h>

#include "sys/agents/secure_channel.hpp"
#include "sys/os/fd_io.hpp"

namespace ezpz::sys {

/// A listening TCP socket on every IPv4 address of this node, on a port the kernel picks.
struct Listener {
  OwnedFd fd;
  int port = 0;
};
[[nodiscard]] std::optional<Listener> listen_any(std::string& why);
/// The same on one IPv4 address of this node, the one its peers dial ("" or not an IPv4 address,
/// a name its peers look up themselves: every one).
[[nodiscard]] std::optional<Listener> listen_on(const std::string& ipv4, std::string& why);

/// A connection to `address` ("name-or-ip:port") within `timeout_ms`; not valid, with `why`,
/// when it cannot be made.
[[nodiscard]] OwnedFd connect_to(const std::string& address, int timeout_ms, std::string& why);
/// connect_to in two halves: the socket and its connect begun, no waiting (not valid, with
/// `why`, when it cannot be); then the wait: 0 once it is up within `timeout_ms`, else its
/// error (ETIMEDOUT: still being made).
[[nodiscard]] OwnedFd begin_connect(const std::string& address, std::string& why);
[[nodiscard]] int wait_connected(int fd, int timeout_ms);
/// "cannot connect to ADDRESS: REASON" for a connection that failed with `err`.
[[nodiscard]] std::string connect_error(const std::string& address, int err);

/// Accept one connection (close-on-exec, non-blocking); not valid when none is waiting.
[[nodiscard]] OwnedFd accept_one(int listener);

/// TCP keepalive on `fd`, probing after 30 s of silence: a peer whose node died is noticed in
/// about a minute.
void keep_alive(int fd);

/// The IPv4 address the peer of `fd` connected from ("" when unknown).
[[nodiscard]] std::string peer_address(int fd);
/// The IPv4 address of this end of `fd` ("" when unknown): the one the peer sees.
[[nodiscard]] std::string local_address(int fd);

/// The connections a listener takes, each one's server handshake (SecureChannel::Accepting) going
/// on as its bytes come: none is held up by another that is slow, silent or a stranger (anyone on
/// a shared node can connect), and each is dropped at its deadline. When descriptors or room run
/// short, the oldest goes once it has had kEvictAfter (a client with the secret is through in a
/// round trip); while none can, the listener rests for kRest.
class Handshakes {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr auto kEvictAfter = std::chrono::seconds(1);
  static constexpr auto kRest = std::chrono::milliseconds(100);

  /// `wait`: each connection's time for its handshake; `limit`: the most under way at once.
  /// `watch` and `unwatch` (an epoll set's upkeep), when given, hear of each descriptor taken
  /// on and of each before it is closed here.
  Handshakes(const Secret& secret, Clock::duration wait, std::size_t limit, std::function<void(int)> watch = {},
             std::function<void(int)> unwatch = {});

  /// Take every connection waiting at `listener` (non-blocking), each one's handshake begun (its
  /// hello may be there): those done at once go to `done`. False when it stopped for want of a
  /// descriptor or of room: the listener is not to be polled before rest_until().
  bool accept_all(int listener, std::vector<SecureChannel>& done);
  /// The handshake on `fd` as far as its bytes allow: the channel once done (its descriptor is
  /// the channel's now); a failed one is dropped.
  std::optional<SecureChannel> advance(int fd);
  [[nodiscard]] bool holds(int fd) const { return pending_.count(fd) != 0; }
  /// Drop those whose deadline is past: the next deadline (Clock::time_point::max(): none).
  Clock::time_point drop_late(Clock::time_point now);
  /// Until when the listener rests (a time past: it does not).
  [[nodiscard]] Clock::time_point rest_until() const { return rest_until_; }
  /// Each handshake's descriptor, to poll for input.
  void add_fds(std::vector<pollfd>& fds) const;
  [[nodiscard]] std::size_t size() const { return pending_.size(); }

 private:
  struct Pending {
    SecureChannel::Accepting accepting;
    Clock::time_point deadline;
  };
  using Map = std::unordered_map<int, Pending>;
  /// The oldest handshake, when it is still under way (stale entries of `order_` go).
  Map::iterator oldest();
  /// Drop the oldest when it has had kEvictAfter; false when there is none such.
  bool evict(Clock::time_point now);
  void drop(Map::iterator it);

  Secret secret_;
  Clock::duration wait_;
  std::size_t limit_;
  std::function<void(int)> watch_;
  std::function<void(int)> unwatch_;
  Map pending_;                                          ///< by descriptor
  std::deque<std::pair<Clock::time_point, int>> order_;  ///< deadline and descriptor, oldest first
  Clock::time_point rest_until_{};
};

}  // namespace ezpz::sys
