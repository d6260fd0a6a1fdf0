#include "sys/broadcast/fanout.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <map>
#include <set>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "core/base/log.hpp"
#include "core/yeet/relay_args.hpp"
#include "sys/nodes/remote_process.hpp"
#include "sys/os/fd_io.hpp"

namespace ezpz::sys {
namespace {
using Clock = std::chrono::steady_clock;
/// A keepalive: a frame header with no data (core/yeet/stream_wire.hpp).
const auto kKeepalive = core::frame_header(core::kKeepaliveLength);
}  // namespace

/// A relay started over ssh: its stdin takes the stream, its stdout gives result lines.
namespace {
/// Write everything to the non-blocking `fd`, waiting at most `timeout_s` for it to take more;
/// 0 written, 1 a closed or broken pipe, 2 stalled.
int write_within(int fd, const void* data, std::size_t size, double timeout_s) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const auto n = ::write(fd, p, size);
    if (n > 0) {
      p += n;
      size -= static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && errno != EAGAIN) {
      return 1;
    }
    pollfd out{fd, POLLOUT, 0};
    const int ready = ::poll(&out, 1, static_cast<int>(timeout_s * 1000));
    if (ready == 0) {
      return 2;
    }
    if (ready < 0 && errno != EINTR) {
      return 1;
    }
  }
  return 0;
}

/// A child's non-blocking descriptor being written by write_each_within, with the child's
/// write lock, held until its part is done.
struct Output {
  int fd = -1;
  std::unique_lock<std::mutex> held;
  Clock::time_point* last_sent = nullptr;
  bool* alive = nullptr;
  std::size_t done = 0;  ///< bytes of the unit written
  int rc = 0;            ///< as write_within: 0 written, 1 a closed or broken pipe, 2 stalled
  bool finished = false;
  Clock::time_point progress{};
};

/// Write `head` then `data` to every output at once; one that takes nothing for `timeout_s`
/// stalls (rc 2) without holding up the others. Each output's lock goes as soon as its part is
/// done, so the keepalive ticker reaches the children that took it while others are slow;
/// after the `last` unit (the end and digest) no keepalive follows.
void write_each_within(std::vector<Output>& outs, const char* head, std::size_t head_size, const char* data,
                       std::size_t size, double timeout_s, bool last) {
  const std::size_t total = head_size + size;
  const auto limit = std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  auto finish = [last](Output& o) {
    if (o.rc == 0) {
      *o.last_sent = last ? Clock::time_point{} : Clock::now();
    } else {
      *o.alive = false;  // half a unit went: nothing more (the caller drops it)
    }
    o.finished = true;
    o.held.unlock();
  };
  for (auto& o : outs) {
    o.progress = Clock::now();
  }
  std::vector<pollfd> fds;
  std::vector<Output*> waiting;
  while (true) {
    fds.clear();
    waiting.clear();
    auto wait = limit;
    for (auto& o : outs) {
      while (!o.finished && o.rc == 0 && o.done < total) {
        const bool in_head = o.done < head_size;
        const auto w = ::write(o.fd, in_head ? head + o.done : data + (o.done - head_size),
                               in_head ? head_size - o.done : total - o.done);
        if (w > 0) {
          o.done += static_cast<std::size_t>(w);
          o.progress = Clock::now();
        } else if (w < 0 && errno == EAGAIN) {
          break;
        } else if (w >= 0 || errno != EINTR) {
          o.rc = 1;
        }
      }
      if (o.finished) {
        continue;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(o.progress + limit - Clock::now());
      if (o.rc == 0 && o.done < total && left.count() <= 0) {
        o.rc = 2;
      }
      if (o.rc != 0 || o.done >= total) {
        finish(o);
        continue;
      }
      wait = std::min(wait, left);
      fds.push_back({o.fd, POLLOUT, 0});
      waiting.push_back(&o);
    }
    if (fds.empty()) {
      return;
    }
    if (::poll(fds.data(), fds.size(), static_cast<int>(wait.count()) + 1) < 0 && errno != EINTR) {
      for (auto* o : waiting) {
        o->rc = 1;
        finish(*o);
      }
      return;
    }
  }
}

void make_nonblocking(int fd) {
  if (fd >= 0) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
}
}  // namespace

struct Fanout::Child {
  core::RelayNode node;
  RemoteChild proc;  ///< we write the stream to proc.in, read result lines from proc.out
  bool alive = true;
  bool reattached = false;        ///< fed by `feeder` from the spool, not by send()
  std::mutex write;               ///< one writer at a time on `proc.in` (send() or the keepalive ticker);
                                  ///< guards it, `alive` and `last_sent` of the children send() feeds
  Clock::time_point last_sent{};  ///< when send() last wrote to it; the epoch: not yet (no keepalive)
  std::string early;              ///< lines read before the relay said it was ready (a connection error)
  std::string dropped_why;        ///< why it was dropped mid-stream, when it was
  std::thread feeder;
};

Fanout::Fanout(core::Transport& transport, std::string this_host, const core::BroadcastSpec& spec)
    : transport_(transport), this_host_(std::move(this_host)), spec_(spec) {
  ::signal(SIGPIPE, SIG_IGN);
}

Fanout::~Fanout() {
  end(Ending::abandoned);
  join_feeders();
  // Then the owners: each child's ends close (and one never collected is killed and reaped),
  // and the spool after them.
  children_.clear();
}

Fanout::Child& Fanout::spawn(const core::RelayNode& node, Feed from) {
  const bool reattached = from == Feed::spool;
  auto c = std::make_unique<Child>();
  c->node = node;
  c->reattached = reattached;
  auto p = transport_.start(node.host,
                            core::RemoteCommand{core::relay_args(spec_, node), core::Ship::when_missing,
                                                core::Stdin::pipe, core::StdinLoad::stream},
                            spec_.reach, node.host);
  c->proc = RemoteChild(p);
  c->alive = c->proc.started();
  children_.push_back(std::move(c));
  auto& child = *children_.back();
  if (reattached && child.alive) {
    child.feeder = std::thread([this, &child] { feed(child); });
  }
  return child;
}

void Fanout::open_spool() {
  const std::string path = spec_.destination + ".ezpz-spool-" + std::to_string(::getpid());
  spool_.reset(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (spool_.valid()) {
    ::unlink(path.c_str());  // nothing to clean up, whatever happens
  }
}

Clock::time_point Fanout::ready_deadline() const {
  return Clock::now() + std::chrono::milliseconds(static_cast<long long>(spec_.stall_timeout_s * 1000));
}

std::string Fanout::not_ready(Clock::time_point deadline) const {
  if (Clock::now() < deadline) {
    return {};  // it ended: its own line (or the caller's) says why
  }
  return "stalled: not ready within " + std::to_string(static_cast<int>(spec_.stall_timeout_s)) +
         " s (connect, log in, start ezpz; dropped, its nodes re-attached)";
}

void Fanout::start(const std::vector<core::RelayNode>& tree) {
  // Every child has the stall timeout, from now, to say it is ready (connected, logged in,
  // ezpz started): a relay's parent streams to it from its own READY on and drops it when it
  // stops reading, so a child slow to start (a hung login, a stopped process) is dropped here
  // first, and the node nearest the fault is the one that fails.
  const auto deadline = ready_deadline();
  for (const auto& node : tree) {
    if (spec_.reattach && !node.children.empty() && !spool_.valid()) {
      open_spool();
    }
  }
  const auto started = Clock::now();
  for (const auto& node : tree) {
    if (cancelled_) {
      break;
    }
    spawn(node, Feed::live);
    log::info("relay to " + node.host + ": starting" +
              (node.children.empty() ? std::string() : " (it feeds " + core::encode_tree(node.children) + ")"));
  }
  const auto spawned = children_.size();  // not those re-attached below (fed by threads of their own)
  for (std::size_t i = 0; i < spawned; ++i) {
    auto& c = *children_[i];
    if (c.alive && !await_ready(c.proc, c.early, deadline, &cancelled_)) {
      c.dropped_why = not_ready(deadline);
      log::info("relay to " + c.node.host + ": dropped: " + (c.dropped_why.empty() ? "it ended" : c.dropped_why));
      c.proc.terminate();
      drop(c);
    } else if (!c.alive) {
      log::info("relay to " + c.node.host + ": could not be started");
      drop(c);
    } else {
      log::info("relay to " + c.node.host + ": ready in " +
                std::to_string(std::chrono::duration<double>(Clock::now() - started).count()).substr(0, 5) + " s");
      make_nonblocking(c.proc.in.get());  // a stalled child must not stall the others (write_within)
    }
  }
  for (std::size_t i = 0; i < spawned; ++i) {
    fed_.push_back(children_[i].get());
  }
  ticker_ = std::jthread([this](const std::stop_token& stop) { keep_alive(stop); });
}

void Fanout::keep_alive(const std::stop_token& stop) {
  // A child whose last bytes from us are a second old gets a keepalive header, unless its part
  // of a unit is under way (send() holds a child's lock only until that child took the unit).
  std::mutex m;
  std::condition_variable_any wake;
  std::unique_lock lock(m);
  while (!wake.wait_for(lock, stop, std::chrono::milliseconds(250), [] { return false; }) && !stop.stop_requested()) {
    for (Child* c : fed_) {
      const std::unique_lock guard(c->write, std::try_to_lock);
      const auto now = Clock::now();
      if (!guard || !c->alive || !c->proc.in.valid() || c->last_sent == Clock::time_point{} ||
          now - c->last_sent < std::chrono::seconds(1)) {
        continue;
      }
      // Non-blocking, and at most PIPE_BUF: all four bytes or none (a full pipe has data enough).
      if (::write(c->proc.in.get(), kKeepalive.data(), kKeepalive.size()) == static_cast<ssize_t>(kKeepalive.size())) {
        c->last_sent = now;
      }
    }
  }
}

void Fanout::start_sender(const std::string& peer, const std::vector<core::RelayNode>& tree) {
  auto c = std::make_unique<Child>();
  c->node = core::RelayNode{peer, tree};
  auto p = transport_.start(
      peer, core::RemoteCommand{core::send_args(spec_, tree), core::Ship::never, core::Stdin::none}, spec_.reach, peer);
  c->proc = RemoteChild(p);
  c->alive = false;  // nothing to send it
  children_.push_back(std::move(c));
}

void Fanout::drop(Child& c) {
  {
    const std::lock_guard guard(c.write);
    c.alive = false;
    c.proc.in.reset();
  }
  bool spool_ok;
  {
    std::lock_guard lock(mutex_);
    spool_ok = spool_.valid() && !spool_failed_ && !ended_;
  }
  if (spool_ok && !c.reattached && !cancelled_) {
    for (const auto& grandchild : c.node.children) {
      log::info("relay to " + grandchild.host + ": re-attached here (its parent " + c.node.host + " was dropped)");
      spawn(grandchild, Feed::spool);
    }
  }
}

void Fanout::send(const void* head, std::size_t head_size, const void* data, std::size_t size) {
  // The end and digest: no keepalive may follow it.
  const bool last = head_size == 4 && core::frame_length(static_cast<const unsigned char*>(head)) == 0;
  if (spool_.valid()) {  // whole units only: a feeder that caught up is between two frames
    const bool spooled = write_all(spool_.get(), head, head_size) && write_all(spool_.get(), data, size);
    std::lock_guard lock(mutex_);
    spool_failed_ = spool_failed_ || !spooled;
    spooled_ += spooled ? head_size + size : 0;
    if (last) {
      last_at_ = spooled_;  // a feeder that fed this far sends no keepalive after it
    }
    more_.notify_all();
  }
  // Only the children started with start() are fed here (drop() may add re-attached ones), all
  // at once: each has the stall timeout from its own last progress, so stalled children cost
  // the others one stall timeout together, not one each.
  const auto n = children_.size();
  std::vector<Child*> to;
  std::vector<Output> outs;
  for (std::size_t i = 0; i < n; ++i) {
    auto& c = *children_[i];
    if (c.reattached) {
      continue;
    }
    std::unique_lock guard(c.write);
    if (c.alive) {
      to.push_back(&c);
      outs.push_back(Output{c.proc.in.get(), std::move(guard), &c.last_sent, &c.alive});
    }
  }
  write_each_within(outs, static_cast<const char*>(head), head_size, static_cast<const char*>(data), size,
                    spec_.stall_timeout_s, last);
  for (std::size_t k = 0; k < to.size(); ++k) {
    auto& c = *to[k];
    if (outs[k].rc == 0) {
      continue;
    }
    if (outs[k].rc == 2) {
      c.dropped_why = "stalled: took no data for " + std::to_string(static_cast<int>(spec_.stall_timeout_s)) +
                      " s (dropped; its nodes re-attached)";
      c.proc.terminate();  // its connection goes: the relay there sees the stream end and discards
    }
    log::info("relay to " + c.node.host +
              ": dropped mid-stream: " + (c.dropped_why.empty() ? std::string("its input closed") : c.dropped_why));
    drop(c);
  }
}

void Fanout::feed(Child& c) {
  const int in = c.proc.in.get();
  const auto deadline = ready_deadline();
  bool ok = await_ready(c.proc, c.early, deadline);
  if (!ok) {
    c.dropped_why = not_ready(deadline);
  }
  make_nonblocking(in);
  std::vector<char> buf(1 << 20);
  unsigned long long offset = 0;
  while (ok) {
    unsigned long long available;
    bool over;
    {
      std::unique_lock lock(mutex_);
      const bool woke =
          more_.wait_for(lock, std::chrono::seconds(1), [&] { return spooled_ > offset || ended_ || spool_failed_; });
      if (!woke && offset > 0 && offset != last_at_) {  // caught up, between two frames, nothing new for 1 s
        lock.unlock();
        ok = write_within(in, kKeepalive.data(), kKeepalive.size(), spec_.stall_timeout_s) == 0;
        continue;
      }
      available = spooled_;
      over = ended_ || spool_failed_;
      ok = !spool_failed_ && (!ended_ || complete_);
    }
    while (ok && offset < available) {
      const auto want = static_cast<std::size_t>(std::min<unsigned long long>(buf.size(), available - offset));
      const auto got = ::pread(spool_.get(), buf.data(), want, static_cast<off_t>(offset));
      ok = got > 0 && write_within(in, buf.data(), static_cast<std::size_t>(got), spec_.stall_timeout_s) == 0;
      offset += got > 0 ? static_cast<unsigned long long>(got) : 0;
    }
    if (over && offset >= available) {
      break;
    }
  }
  if (!ok) {
    c.proc.terminate();  // an incomplete stream: the relay discards its work
  }
  c.proc.in.reset();
  c.alive = false;
}

void Fanout::end(Ending ending) {
  const bool complete = ending == Ending::complete;
  if (ticker_.joinable()) {
    ticker_.request_stop();
    ticker_.join();
  }
  {
    std::lock_guard lock(mutex_);
    if (ended_) {
      return;
    }
    ended_ = true;
    complete_ = complete;
    more_.notify_all();
  }
}

void Fanout::join_feeders() {
  for (auto& c : children_) {
    if (c->feeder.joinable()) {
      c->feeder.join();
    }
  }
}

void Fanout::terminate() {
  for (auto& c : children_) {
    c->proc.terminate();
  }
}

std::vector<core::NodeResult> Fanout::collect(const std::string& why_missing, const core::ResultFn& on_result) {
  end(complete_ ? Ending::complete : Ending::abandoned);  // no-op when the caller ended the stream
  join_feeders();
  std::map<std::string, core::NodeResult> reported;
  std::vector<std::string> pending(children_.size());
  auto take_lines = [&](std::size_t i) {
    for (auto nl = pending[i].find('\n'); nl != std::string::npos; nl = pending[i].find('\n')) {
      if (auto r = core::decode_result(pending[i].substr(0, nl))) {
        if (children_[i]->reattached && r->reattached_to.empty()) {
          r->reattached_to = this_host_;
        }
        auto it = reported.find(r->host);
        if (it == reported.end() || !it->second.ok()) {  // a success beats an earlier failure
          reported[r->host] = *r;
          if (on_result) {
            on_result(*r);
          }
        }
      }
      pending[i].erase(0, nl + 1);
    }
  };
  for (std::size_t i = 0; i < children_.size(); ++i) {
    auto& c = *children_[i];
    c.proc.in.reset();
    pending[i] = c.early;
    take_lines(i);
  }
  // Every relay says something at least once a second until its last line (its heartbeat):
  // one silent for the stall timeout has stopped or lost its link, and is dropped.
  const auto silence = std::chrono::milliseconds(static_cast<long long>(spec_.stall_timeout_s * 1000));
  std::vector<Clock::time_point> heard(children_.size(), Clock::now());
  while (true) {
    std::vector<pollfd> fds;
    std::vector<std::size_t> index;
    auto wait = silence;
    const auto now = Clock::now();
    for (std::size_t i = 0; i < children_.size(); ++i) {
      auto& c = *children_[i];
      if (!c.proc.out.valid()) {
        continue;
      }
      if (now - heard[i] >= silence) {
        c.dropped_why = "stalled: said nothing for " + std::to_string(static_cast<int>(spec_.stall_timeout_s)) +
                        " s after the stream (dropped)";
        log::info("relay to " + c.node.host + ": " + c.dropped_why);
        c.proc.terminate();  // its connection goes: a relay still at work there discards it
        c.proc.out.reset();
        continue;
      }
      wait = std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(heard[i] + silence - now));
      fds.push_back({c.proc.out.get(), POLLIN, 0});
      index.push_back(i);
    }
    if (fds.empty()) {
      break;
    }
    if (::poll(fds.data(), fds.size(), static_cast<int>(wait.count()) + 1) < 0 && errno != EINTR) {
      break;
    }
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
        continue;
      }
      const auto i = index[k];
      char buf[4096];
      const auto n = ::read(children_[i]->proc.out.get(), buf, sizeof(buf));
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0) {
        children_[i]->proc.out.reset();
        continue;
      }
      heard[i] = Clock::now();
      pending[i].append(buf, static_cast<std::size_t>(n));
      take_lines(i);
    }
  }
  std::vector<core::NodeResult> results;
  std::set<std::string> listed;
  for (auto& c : children_) {
    (void)c->proc.child.wait();
    for (const auto& host : core::subtree_hosts(c->node)) {
      if (!listed.insert(host).second) {
        continue;
      }
      auto it = reported.find(host);
      if (it != reported.end()) {
        results.push_back(it->second);
        continue;
      }
      core::NodeResult r;
      r.host = host;
      r.outcome = host != c->node.host ? core::NodeOutcome::orphaned : core::NodeOutcome::failed;
      r.error = host != c->node.host      ? "no report: its parent relay " + c->node.host + " failed"
                : !c->dropped_why.empty() ? c->dropped_why
                                          : why_missing;
      if (on_result) {
        on_result(r);
      }
      results.push_back(r);
    }
  }
  return results;
}

}  // namespace ezpz::sys
