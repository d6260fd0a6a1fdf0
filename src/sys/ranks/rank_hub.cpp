// The launch's end of the rank channel: one listener, a sealed connection per rank, and what
// each rank printed passed on in whole lines (labelled "[host rank] " when asked), stdout to
// stdout and stderr to stderr; what each rank said of its end; who is quiet. The job's
// supervision waits on one descriptor, an epoll set of them all: a wake costs what the ready
// connections bring, not a look at every rank's (49,152 of them on 4,096 nodes).
#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "core/launch/failure_signs.hpp"
#include "sys/agents/net.hpp"
#include "sys/agents/secure_channel.hpp"
#include "sys/os/exec.hpp"
#include "sys/os/line_relay.hpp"
#include "sys/ranks/rank_channels.hpp"

namespace ezpz::sys {
namespace {

using Clock = std::chrono::steady_clock;

/// A shim has this long to finish its handshake and say hello (its own wait is as long).
constexpr auto kHelloWait = std::chrono::seconds(10);

/// One shim's connection and what it said.
struct Conn {
  std::optional<SecureChannel> ch;  ///< none once closed
  int rank = -1;                    ///< -1 until its hello
  std::string host;
  LineStream out;
  LineStream err;
  std::optional<core::RankExit> exit;
  double closed_at = 0;
  double heard_at = 0;  ///< when it last sent anything (its heartbeat included)
};

class Hub final : public core::RankHub {
 public:
  Hub(core::HubOptions options, Listener listener, Secret secret, OwnedFd epoll, OwnedFd timer)
      : options_(std::move(options)),
        listener_(std::move(listener)),
        secret_(secret),
        epoll_(std::move(epoll)),
        timer_(std::move(timer)),
        // As many handshakes as there are descriptors: a launch's ranks may all call at once.
        handshakes_(
            secret_, kHelloWait, SIZE_MAX, [this](int fd) { watch(fd); }, [this](int fd) { unwatch(fd); }) {
    watch(listener_.fd.get());
    watch(timer_.get());
  }
  Hub(const Hub&) = delete;
  Hub& operator=(const Hub&) = delete;
  ~Hub() override {
    for (auto& c : conns_) {
      close(c);  // every shim still connected stops its rank: the launch is over
    }
  }

  [[nodiscard]] std::string address() const override { return options_.host + ":" + std::to_string(listener_.port); }
  [[nodiscard]] std::string key() const override { return secret_hex(secret_); }

  [[nodiscard]] std::vector<int> fds() const override { return {epoll_.get()}; }

  /// The ready ones among the listener, the timer, the handshakes and the connections (up to 256
  /// a call: the rest stay ready for the next).
  bool service(int fd) override {
    if (fd != epoll_.get()) {
      return false;
    }
    std::array<epoll_event, 256> ready{};
    const int n = ::epoll_wait(epoll_.get(), ready.data(), static_cast<int>(ready.size()), 0);
    bool output = false;
    for (int i = 0; i < n; ++i) {
      output = serve(ready[static_cast<std::size_t>(i)].data.fd) || output;
    }
    return output;
  }

  void kill_ranks() override {
    for (auto& c : conns_) {
      if (c.ch && !c.exit) {
        (void)c.ch->send('K', "");
      }
    }
  }

  bool stop_ranks(int signo) override {
    if (std::none_of(conns_.begin(), conns_.end(), [](const Conn& c) { return c.rank >= 0; })) {
      return false;  // no shim has called: only the launcher reaches its ranks (or a step not started)
    }
    for (auto& c : conns_) {
      if (c.ch && !c.exit && c.rank >= 0) {
        (void)c.ch->send('T', std::to_string(signo));
      }
    }
    stop_signal_ = signo;  // a shim that calls later is stopped at its hello
    holding_ = true;
    return true;
  }

  [[nodiscard]] bool ranks_ended() const override {
    return std::none_of(conns_.begin(), conns_.end(), [](const Conn& c) { return c.ch && !c.exit; });
  }

  void release_ranks() override {
    for (auto& c : conns_) {
      if (c.ch) {
        (void)c.ch->send('R', "");
      }
    }
    holding_ = false;
  }

  void finish(double grace_s, double kill_wait_s) override {
    if (holding_) {
      release_ranks();  // the launcher ended under them: nothing left to hold them for
    }
    wait_for_closed(grace_s);
    if (!by_fd_.empty()) {
      kill_ranks();
      wait_for_closed(kill_wait_s);
    }
    for (auto& c : conns_) {
      close(c);
    }
  }

  [[nodiscard]] std::optional<core::RankFailure> take_failure() override {
    return std::exchange(failure_, std::nullopt);
  }

  [[nodiscard]] std::vector<core::RankWatch> ranks() const override {
    std::map<int, core::RankWatch> by_rank;
    for (int r = 0; r < options_.nprocs; ++r) {
      by_rank[r].rank = r;  // never heard from: no host, no output
    }
    for (const auto& c : conns_) {
      if (c.rank < 0) {
        continue;
      }
      auto& w = by_rank[c.rank];
      const auto& latest = c.out.last_time >= c.err.last_time ? c.out : c.err;
      w = {c.rank, c.host, c.exit.has_value() || !c.ch, 0, 0, latest.last_time, latest.tail.last(), c.heard_at};
      if (c.exit) {
        w.exit_code = c.exit->exit_code;
        w.ended_at = c.exit->time;
      } else if (!c.ch) {
        w.exit_code = -1;  // gone without a word (its shim was killed)
        w.ended_at = c.closed_at;
      }
    }
    std::vector<core::RankWatch> out;
    for (auto& [r, w] : by_rank) {
      out.push_back(std::move(w));
    }
    return out;
  }

  [[nodiscard]] std::vector<core::RankExit> exits() const override {
    std::vector<core::RankExit> out;
    for (const auto& c : conns_) {
      if (c.exit) {
        out.push_back(*c.exit);
      }
    }
    return out;
  }

 private:
  /// One ready descriptor: the listener, the timer, a handshake or a connection (one closed since
  /// it was reported is none of them). True when a rank's output came.
  bool serve(int fd) {
    if (fd == listener_.fd.get()) {
      accept_all();
      return false;
    }
    if (fd == timer_.get()) {
      on_timer();
      return false;
    }
    if (handshakes_.holds(fd)) {
      if (auto ch = handshakes_.advance(fd)) {
        admit(std::move(*ch));
      }
      return false;
    }
    if (auto c = by_fd_.find(fd); c != by_fd_.end()) {
      return take(*c->second);
    }
    return false;
  }

  void watch(int fd) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    (void)::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev);
  }

  /// Before its descriptor closes (a forked child's copy would keep it in the set).
  void unwatch(int fd) { (void)::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr); }

  /// Every connection waiting at the listener, each one's handshake begun: it goes on as its
  /// bytes come (a slow or silent peer holds up no other), and ends at its shim's hello. Out of
  /// descriptors (a flood of connections), the listener rests a moment and is listened to again:
  /// the shims still waiting are taken once descriptors come back (each stranger's at its deadline).
  void accept_all() {
    std::vector<SecureChannel> done;
    if (!handshakes_.accept_all(listener_.fd.get(), done)) {
      unwatch(listener_.fd.get());
      listening_ = false;
      arm(handshakes_.rest_until());
    }
    for (auto& ch : done) {
      admit(std::move(ch));
    }
    arm(handshakes_.drop_late(Clock::now()));
  }

  /// The timer: handshakes past their time go (a stranger keeps no descriptor for long, though no
  /// other connection comes), and a listener that rested is listened to again.
  void on_timer() {
    std::uint64_t fired = 0;
    (void)::read(timer_.get(), &fired, sizeof fired);
    armed_for_ = Clock::time_point::max();
    const auto now = Clock::now();
    if (!listening_ && now >= handshakes_.rest_until()) {
      watch(listener_.fd.get());
      listening_ = true;
    }
    arm(listening_ ? Clock::time_point::max() : handshakes_.rest_until());
    arm(handshakes_.drop_late(now));
  }

  /// The timer set to go off at `when` at the latest (max(): no need).
  void arm(Clock::time_point when) {
    if (when >= armed_for_) {
      return;
    }
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch()).count();
    itimerspec at{};
    at.it_value.tv_sec = static_cast<time_t>(ns / 1000000000);
    at.it_value.tv_nsec = static_cast<long>(std::max<long long>(ns % 1000000000, 1));
    if (::timerfd_settime(timer_.get(), TFD_TIMER_ABSTIME, &at, nullptr) == 0) {
      armed_for_ = when;
    }
  }

  /// A connection whose handshake is done: a shim of this launch.
  void admit(SecureChannel ch) {
    auto& c = conns_.emplace_back();
    c.ch = std::move(ch);
    by_fd_[c.ch->fd()] = &c;  // the same descriptor, still watched
    (void)take(c);            // its hello may have come with its proof
  }

  /// A shim's hello (its first record): who it is, and the grace it gets before a kill. False
  /// for anything else.
  bool hello(Conn& c, char type, const std::string& data) {
    if (type != 'H') {
      return false;
    }
    char grace[32];
    std::snprintf(grace, sizeof(grace), "%.3f%s", options_.kill_after_s, options_.stops_ranks ? " stops" : "");
    if (!c.ch->send('A', grace)) {
      return false;
    }
    // Its end report acked at once (not 40 ms later, as a reply to this answer would be): a
    // shim whose rank ended well ends as soon as every byte it sent is acked.
    const int quick = 1;
    (void)::setsockopt(c.ch->fd(), IPPROTO_TCP, TCP_QUICKACK, &quick, sizeof quick);
    const auto space = data.find(' ');
    c.rank = std::atoi(data.substr(0, space).c_str());
    c.host = space == std::string::npos ? "" : data.substr(space + 1);
    const bool shown = core::in_ranges(options_.console, c.rank);
    const auto label = options_.label ? core::rank_label(c.host, c.rank) : "";
    c.out.out_fd = shown ? 1 : -1;
    c.err.out_fd = shown ? 2 : -1;
    c.out.label = c.err.label = label;
    // Only the last line of each (who went quiet): the shim sends its rank's last words itself.
    c.out.tail = c.err.tail = core::LineTail(1, 300);
    if (stop_signal_ != 0) {  // the job is being stopped: this rank too
      (void)c.ch->send('T', std::to_string(stop_signal_));
    }
    return true;
  }

  /// What one connection has now; true when it carried output.
  bool take(Conn& c) {
    const auto got = c.ch->fill();
    bool output = false;
    char type = 0;
    std::string data;
    SecureChannel::Got next;
    while ((next = c.ch->next(type, data)) == SecureChannel::Got::record) {
      c.heard_at = wall_clock_seconds();  // 'A': alive, and nothing else to do
      if (c.rank < 0) {
        if (!hello(c, type, data)) {
          close(c);
          return false;
        }
      } else if (type == 'O' || type == 'E') {
        feed(type == 'O' ? c.out : c.err, data);
        output = true;
      } else if (type == 'o' || type == 'e') {  // a rank the console does not show: its last line
        auto& s = type == 'o' ? c.out : c.err;
        s.last_time = wall_clock_seconds();
        s.tail.push(data + "\n");
        output = true;
      } else if (type == 'X') {
        c.exit = core::parse_exit_report(data);
        if (options_.stops_ranks && !holding_) {
          (void)c.ch->send('R', "");  // heard: the shim may end (in a stop, release_ranks says it)
        }
        if (c.exit && c.exit->exit_code != 0 && !failure_said_) {
          failure_said_ = true;
          // (a command that could not start is named once, by the summary)
          const auto what = c.exit->exec_errno != 0 ? "could not start its command" : core::describe_exit(*c.exit);
          failure_ = core::RankFailure{core::where(*c.exit) + " " + what, c.exit->exit_code, c.exit->exec_errno != 0,
                                       core::has_systemic_sign(c.exit->last_lines)};
        }
      }
    }
    if (got == SecureChannel::Got::closed || next == SecureChannel::Got::forged) {
      close(c);
    }
    return output;
  }

  void close(Conn& c) {
    if (c.ch) {
      emit_lines(c.out, LineEnd::flush);
      emit_lines(c.err, LineEnd::flush);
      unwatch(c.ch->fd());
      by_fd_.erase(c.ch->fd());
      c.ch.reset();
      c.closed_at = wall_clock_seconds();
    }
  }

  /// Up to `seconds` for every shim's connection to close. Only connections whose handshake is
  /// done count: a stranger's (silent, or a hello it cannot follow with the secret) holds up no end.
  void wait_for_closed(double seconds) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
    (void)service(epoll_.get());  // a handshake whose proof is here is a connection
    while (!by_fd_.empty() && Clock::now() < deadline) {
      pollfd p{epoll_.get(), POLLIN, 0};
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count() + 1;
      if (::poll(&p, 1, static_cast<int>(std::max<long long>(ms, 0))) > 0) {
        (void)service(p.fd);
      }
    }
  }

  core::HubOptions options_;
  Listener listener_;
  Secret secret_;
  OwnedFd epoll_;  ///< the listener, the timer, the handshakes and the connections
  OwnedFd timer_;  ///< handshakes' deadlines, the listener's rest
  Clock::time_point armed_for_ = Clock::time_point::max();  ///< when the timer goes off
  bool listening_ = true;                                   ///< the listener is in the epoll set
  Handshakes handshakes_;                                   ///< connections not yet through their handshake
  std::deque<Conn> conns_;                                  ///< every shim heard, in the order they came
  std::unordered_map<int, Conn*> by_fd_;                    ///< the open ones by descriptor
  bool failure_said_ = false;
  bool holding_ = false;                      ///< stop_ranks() told the shims to hold their ends
  int stop_signal_ = 0;                       ///< stop_ranks()'s signal, for shims that call after it
  std::optional<core::RankFailure> failure_;  ///< the first failure, until taken
};

}  // namespace

Expected<std::unique_ptr<core::RankHub>> SecureRankChannels::open_hub(const core::HubOptions& options) {
  const auto secret = new_secret();
  if (!secret) {
    return failure("no random bytes for the rank hub's secret");
  }
  // One descriptor per rank: take all the soft limit may grow to (a login node's 1,024 is less
  // than one large job's ranks).
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &files);
  }
  std::string why;
  auto listener = listen_on(options.host, why);  // 127.0.0.1 (every rank here): loopback only
  if (!listener) {
    return failure("cannot listen for the ranks' output: " + why);
  }
  OwnedFd epoll(::epoll_create1(EPOLL_CLOEXEC));
  OwnedFd timer(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  if (!epoll.valid() || !timer.valid()) {
    return failure(std::string("cannot watch the ranks' connections: ") + (epoll.valid() ? "timerfd" : "epoll") +
                   "_create: " + std::strerror(errno));
  }
  return std::unique_ptr<core::RankHub>(
      std::make_unique<Hub>(options, std::move(*listener), *secret, std::move(epoll), std::move(timer)));
}

}  // namespace ezpz::sys
