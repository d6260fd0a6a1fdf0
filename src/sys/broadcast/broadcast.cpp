#include "sys/broadcast/broadcast.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <thread>
#include <utility>

#include <nettle/sha2.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/log.hpp"
#include "core/base/shell.hpp"
#include "core/yeet/relay_args.hpp"
#include "sys/broadcast/fanout.hpp"
#include "sys/broadcast/heartbeat.hpp"
#include "sys/broadcast/stream_input.hpp"
#include "sys/fs/adaptive_zstd.hpp"
#include "sys/fs/archive.hpp"
#include "sys/fs/destination.hpp"
#include "sys/fs/incremental.hpp"
#include "sys/fs/janitor.hpp"
#include "sys/fs/tree.hpp"
#include "sys/nodes/remote_process.hpp"
#include "sys/os/fd_io.hpp"
#include "sys/os/owned.hpp"
#include "sys/os/safe_dirs.hpp"

namespace ezpz::sys {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

std::vector<core::NodeResult> broadcast_tree(core::Transport& transport, const std::string& root,
                                             const std::string& name, const std::vector<core::RelayNode>& tree,
                                             const core::BroadcastSpec& options, const core::ProgressFn& progress,
                                             const core::ResultFn& on_result, const std::atomic<bool>& stop,
                                             core::StreamStats* stats) {
  Fanout fan(transport, options.this_host, options);
  start_stream(fan, tree);
  return stream_tree(fan, root, name, options, progress, on_result, stop, stats);
}

void start_stream(Fanout& fan, const std::vector<core::RelayNode>& tree) {
  fan.start(tree);
  // The stream's first unit at once: from then on a relay that waits for the rest hears a
  // keepalive every second (the ticker skips a child sent nothing yet).
  fan.send(core::kStreamMagic.data(), core::kStreamMagic.size());
}

std::vector<core::NodeResult> stream_tree(Fanout& fan, const std::string& root, const std::string& name,
                                          const core::BroadcastSpec& options, const core::ProgressFn& progress,
                                          const core::ResultFn& on_result, const std::atomic<bool>& stop,
                                          core::StreamStats* stats) {
  sha256_ctx digest;
  sha256_init(&digest);
  unsigned long long sent = 0;
  ArchiveSink sink = [&](const void* data, std::size_t size) {
    if (stop.load()) {
      return false;
    }
    const auto header = core::frame_header(static_cast<std::uint32_t>(size));
    fan.send(header.data(), header.size(), data, size);
    sha256_update(&digest, size, static_cast<const std::uint8_t*>(data));
    sent += size;
    if (progress) {
      progress(sent);
    }
    return true;
  };
  // libarchive writes plain tar; the stream is compressed here, at a level that follows the link.
  AdaptiveZstd zstd(sink, options.stream_level, std::max(1U, std::thread::hardware_concurrency()),
                    FrameCheck::none);  // the stream's SHA-256 checks it
  ArchiveSink tar_sink = [&](const void* data, std::size_t size) { return !stop.load() && zstd.write(data, size); };
  const bool packed = pack_tree_to(root, name, tar_sink, core::ArchiveFormat::tar, {}, {}, stop) && zstd.finish();
  if (stats != nullptr) {
    auto shown = [](int level) { return level == AdaptiveZstd::kOff ? 0 : level; };  // 0: not compressed
    *stats = core::StreamStats{sent, shown(zstd.min_level_used()), shown(zstd.max_level_used()), shown(zstd.level())};
  }
  const bool complete = packed && !stop.load();
  if (complete) {
    const auto end = core::frame_header(0);
    unsigned char sum[core::kDigestSize];
    sha256_digest(&digest, sizeof(sum), sum);
    fan.send(end.data(), end.size(), sum, sizeof(sum));
  } else {
    fan.terminate();
  }
  fan.end(complete);
  return fan.collect(packed ? "its relay ended without a report" : "the head stopped sending", on_result);
}

std::vector<core::NodeResult> send_from_peer(core::Transport& transport, const std::string& peer,
                                             const std::vector<core::RelayNode>& tree,
                                             const core::BroadcastSpec& options, const core::ResultFn& on_result) {
  Fanout fan(transport, options.this_host, options);
  fan.start_sender(peer, tree);
  fan.end(true);
  auto results = fan.collect("the copy from " + peer + " ended without a report", [&](const core::NodeResult& r) {
    if (r.host != peer && on_result) {
      on_result(r);
    }
  });
  std::erase_if(results, [&](const core::NodeResult& r) { return r.host == peer; });
  return results;
}

namespace {

/// The login name the relay runs as, from its environment (ssh sets USER; a launcher's agent
/// inherits it).
std::string env_user() {
  const char* user = std::getenv("USER");
  return user != nullptr ? user : "";
}

/// A relay's work directory beside the destination (its parents made; earlier runs' work swept;
/// a watcher that removes it if this relay is killed). `error` says why it could not be made, or
/// why what is at the destination is not yeet's to replace (then nothing is touched).
Leftovers prepare_work(const std::string& dst, const std::string& staging, bool force, const std::string& host,
                       std::string& error) {
  if (auto ok = core::check_replaceable(dst, inspect_destination(dst), force, host, env_user()); !ok) {
    error = ok.error().message;
    return {};
  }
  const auto slash = dst.rfind('/');
  if (auto made = make_dirs_safely(slash == 0 ? "/" : dst.substr(0, slash)); !made) {
    error = made.error().message + (host.empty() ? "" : " (on " + host + ")");
    return {};
  }
  Leftovers leftovers = remove_stale_staging(dst);  // warnings on stderr (the head's, through ssh)
  (void)start_janitor(dst, staging);                // removes what is left of it if we are killed
  if (::mkdir(staging.c_str(), 0700) != 0) {        // private at the top (docs/security.md)
    error = work_dir_error(staging);
  }
  return leftovers;
}

/// The stream received whole into `staging`: its single top directory lifted, a delta bundle
/// applied to this node's copy, the result committed in place of `dst`, the work removed. True
/// when the delta could not apply to this copy (the head sends it everything instead).
bool install_received(const std::string& staging, const std::string& dst, std::string& error, Leftovers& leftovers) {
  bool full_copy_needed = false;
  if (error.empty()) {
    if (auto lifted = lift_single_directory(staging); !lifted) {
      error = lifted.error().message;
    }
  }
  // A delta bundle is applied to this node's copy (hard links + the changes) in a second work
  // directory; a full stream is the new tree itself.
  std::string result_tree = staging;
  if (error.empty() && is_bundle(staging)) {
    result_tree = staging + ".apply";
    if (::mkdir(result_tree.c_str(), 0755) != 0) {
      error = "cannot create " + result_tree + ": " + std::strerror(errno);
    } else if (auto applied = apply_bundle(staging, dst, result_tree); !applied) {
      error = applied.error().message;
      full_copy_needed = applied.error().kind == ErrorKind::needs_full_copy;
    }
  }
  if (error.empty()) {
    if (auto r = commit_tree(result_tree, dst); !r) {
      error = r.error().message;
    } else {
      leftovers.insert(leftovers.end(), r->begin(), r->end());
    }
  }
  for (const auto& work : {staging, result_tree}) {
    if (auto gone = remove_tree(work); !gone) {
      leftovers.push_back(gone.error().message);
    }
  }
  return full_copy_needed;
}

/// This relay's own result, said in its log too (-v on the head).
void conclude(core::NodeResult& me, const std::string& error, bool full_copy_needed, Clock::time_point start,
              const std::string& dst) {
  me.outcome = error.empty()      ? core::NodeOutcome::ok
               : full_copy_needed ? core::NodeOutcome::needs_full_copy
                                  : core::NodeOutcome::failed;
  me.error = error;
  me.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const auto secs = std::to_string(me.seconds).substr(0, 5);
  log::info("relay: " + std::to_string(me.bytes) + " bytes of stream, SHA-256 " + (me.digest_ok ? "ok" : "not ok") +
            "; " + (error.empty() ? dst + " in place after " + secs + " s" : "failed after " + secs + " s: " + error));
}

}  // namespace

int run_relay(core::Transport& transport, const std::string& this_host,
              const std::vector<core::RelayNode>& children_spec, const core::BroadcastSpec& options, std::ostream& out,
              const std::atomic<bool>& stop) {
  ::signal(SIGPIPE, SIG_IGN);
  const auto start = Clock::now();
  core::NodeResult me;
  me.host = this_host;
  out << core::kReadyLine << std::endl;  // the parent starts streaming; the pipe holds it meanwhile
  Fanout fan(transport, this_host, options);
  fan.start(children_spec);  // within our stall timeout: the parent streams from our READY on
  // The staging directory beside the destination.
  const auto& dst = options.destination;
  const std::string staging = core::work_path(dst, ::getpid());
  std::string error;
  Leftovers leftovers = prepare_work(dst, staging, options.force, this_host, error);
  log::info("relay: reading the stream into " + staging + (error.empty() ? std::string() : ": " + error));

  // Read frames from stdin, forward each, hand the data to the extractor. A parent that says
  // nothing at all for --parent-silence is gone without an end of file (its node, or a link on
  // the way, died): give up rather than hold the work directory for ever.
  const int silence_ms =
      options.parent_silence_s > 0 ? static_cast<int>(std::min(options.parent_silence_s, 1e6) * 1000) : -1;
  bool parent_silent = false;  // and that is what went wrong first
  bool broken = false;         // once a read failed, never wait on the parent again
  StreamInput input(options.sealed_stdin_fd, 0, &stop);
  auto read_in = [&](void* data, std::size_t size) {
    const auto got = broken ? ReadResult::ended : input.read(data, size, silence_ms);
    parent_silent = parent_silent || (got == ReadResult::timed_out && error.empty());
    broken = got != ReadResult::ok;
    return !broken;
  };
  char magic[16] = {};
  bool stream_ok = read_in(magic, core::kStreamMagic.size()) &&
                   std::string_view(magic, core::kStreamMagic.size()) == core::kStreamMagic;
  if (stream_ok) {
    fan.send(magic, core::kStreamMagic.size());
  }
  sha256_ctx digest;
  sha256_init(&digest);
  std::string frame;
  bool ended = false;
  bool digest_ok = false;
  auto next_frame = [&]() -> std::optional<std::string_view> {
    if (ended) {
      return std::string_view();
    }
    unsigned char header[4];
    auto length = core::kKeepaliveLength;
    while (length == core::kKeepaliveLength) {  // our own children hear from our Fanout
      if (stop.load() || !read_in(header, 4)) {
        return std::nullopt;
      }
      length = core::frame_length(header);
    }
    if (length == 0) {
      unsigned char sum[core::kDigestSize];
      unsigned char want[core::kDigestSize];
      if (!read_in(want, sizeof(want))) {
        return std::nullopt;
      }
      fan.send(header, sizeof(header), want, sizeof(want));
      sha256_digest(&digest, sizeof(sum), sum);
      digest_ok = std::memcmp(sum, want, sizeof(sum)) == 0;
      ended = true;
      return std::string_view();
    }
    if (length > (64U << 20)) {
      return std::nullopt;  // not our stream
    }
    frame.resize(length);
    if (!read_in(frame.data(), length)) {
      return std::nullopt;
    }
    fan.send(header, sizeof(header), frame.data(), length);
    sha256_update(&digest, length, reinterpret_cast<const std::uint8_t*>(frame.data()));  // NOLINT
    me.bytes += length;
    return std::string_view(frame);
  };
  if (!stream_ok) {
    error = "the stream did not start with ezpz's header";
  } else if (error.empty()) {
    auto extracted = extract_archive_from(next_frame, "the stream", staging, stop);
    if (!extracted) {
      error = extracted.error().message;
    }
  }
  // Whatever happened here, the children still get the rest of the stream.
  while (stream_ok && !ended) {
    if (!next_frame()) {
      if (error.empty()) {
        error = "the stream broke off before its end";
      }
      break;
    }
  }
  if (!input.why().empty()) {
    error = input.why();  // the cause of whatever broke after it
  }
  if (parent_silent) {
    error = "its parent sent nothing for " + std::to_string(static_cast<int>(options.parent_silence_s)) +
            " s: gone (its node or link failed); work discarded";
  }
  fan.end(ended);  // re-attached children get the rest meanwhile
  // From here on the parent only reads: a line a second tells it this relay is still at work.
  ResultLines say(out);
  if (error.empty() && !digest_ok) {
    error = "the stream's SHA-256 does not match: data was damaged on the way";
  }
  me.digest_ok = digest_ok;
  const bool full_copy_needed = install_received(staging, dst, error, leftovers);
  for (const auto& left : leftovers) {
    log::line("ezpz: warning: " + this_host + ": " + left);
  }
  conclude(me, error, full_copy_needed, start, dst);
  // This node's line at once, then each line of the subtree as it arrives: the head shows
  // nodes finishing live.
  say(me);
  fan.collect("its relay ended without a report", std::ref(say));
  return me.ok() ? 0 : 1;
}

int serve_copy(core::Transport& transport, const std::string& root, const std::vector<core::RelayNode>& tree,
               const core::BroadcastSpec& options, std::ostream& out, const std::atomic<bool>& stop) {
  ResultLines say(out);  // the head only reads from here: keep it hearing from us
  const auto name = root.substr(root.rfind('/') + 1);
  const auto results = broadcast_tree(transport, root, name, tree, options, {}, std::ref(say), stop);
  return std::all_of(results.begin(), results.end(), [](const core::NodeResult& r) { return r.ok(); }) ? 0 : 1;
}

}  // namespace ezpz::sys

namespace ezpz::sys {
namespace {

/// One push of greedy_broadcast: the copy from `source` ("" this node) to `target`.
struct Push {
  std::string source;
  std::string target;
  RemoteChild proc;  ///< `ezpz __yeet-send`; its result lines on proc.out
  std::string text;  ///< what it printed so far
};

/// Start `ezpz __yeet-send` from `source` ("" this node: run here) to `target`; not started()
/// when it could not be.
RemoteChild start_push(core::Transport& transport, const core::BroadcastSpec& options, const std::string& source,
                       const std::string& target) {
  const auto send = core::send_args(options, core::relay_tree({target}, 1));
  if (!source.empty()) {  // from a node that has the copy (and this binary: it ran a relay)
    return RemoteChild(transport.start(source, core::RemoteCommand{send, core::Ship::never, core::Stdin::none},
                                       options.reach, target));
  }
  std::vector<std::string> argv = {options.reach.self_exe};
  argv.insert(argv.end(), send.begin(), send.end());
  std::vector<char*> args;
  for (auto& a : argv) {
    args.push_back(a.data());
  }
  args.push_back(nullptr);
  RemoteChild push;
  OwnedPipe out;
  if (!out.open()) {
    return push;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {  // until exec: no destructor runs here (the pipe is the parent's)
    ::dup2(out.write_end(), 1);
    ::signal(SIGPIPE, SIG_DFL);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  if (pid > 0) {
    push.child = OwnedChild(pid);
    push.out = out.take_read();
  }
  return push;
}

/// Wait until one of `running` has ended (it is reaped) and return its pid, gathering what each
/// prints meanwhile (an end of output closes it); 0 once `stop` is set, -1 when polling fails.
/// Only these children are waited for: never another child of this process.
pid_t await_push(std::map<pid_t, Push>& running, const std::atomic<bool>& stop) {
  std::vector<pollfd> fds;
  std::vector<Push*> who;
  while (!stop.load()) {
    for (auto& [pid, push] : running) {
      if (push.proc.child.try_wait()) {
        return pid;
      }
    }
    fds.clear();
    who.clear();
    for (auto& [pid, push] : running) {
      if (push.proc.out.valid()) {
        fds.push_back({push.proc.out.get(), POLLIN, 0});
        who.push_back(&push);
      }
    }
    // One whose output ended is about to exit; the others are looked at now and then too (its
    // output may be held open by a process it started).
    const int ms = fds.size() < running.size() ? 10 : 250;
    if (::poll(fds.data(), fds.size(), ms) < 0 && errno != EINTR) {
      return -1;
    }
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
        continue;
      }
      char buf[4096];
      const auto n = ::read(fds[k].fd, buf, sizeof(buf));
      if (n > 0) {
        who[k]->text.append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        who[k]->proc.out.reset();
      }
    }
  }
  return 0;
}

/// The result of a push that ended: its own line about its target, if it printed one.
core::NodeResult push_result(Push& push) {
  char buf[4096];
  ssize_t n;
  while (push.proc.out.valid() && (n = ::read(push.proc.out.get(), buf, sizeof(buf))) > 0) {
    push.text.append(buf, static_cast<std::size_t>(n));
  }
  push.proc.out.reset();
  const auto& text = push.text;
  core::NodeResult r;
  r.host = push.target;
  r.error =
      "the push from " + (push.source.empty() ? std::string("this node") : push.source) + " ended without a report";
  for (std::size_t start = 0; start < text.size();) {
    auto nl = text.find('\n', start);
    if (auto got = core::decode_result(text.substr(start, nl == std::string::npos ? nl : nl - start));
        got && got->host == r.host) {
      r = *got;
    }
    start = nl == std::string::npos ? text.size() : nl + 1;
  }
  return r;
}

}  // namespace

std::vector<core::NodeResult> greedy_broadcast(core::Transport& transport, const core::HostList& targets,
                                               const core::BroadcastSpec& options, int per_source,
                                               const std::atomic<bool>& stop) {
  ::signal(SIGPIPE, SIG_IGN);
  std::map<std::string, int> load{{"", 0}};  // "" = this node
  std::map<pid_t, Push> running;             // each closed, and reaped, on every way out
  std::vector<core::NodeResult> results;
  std::size_t next = 0;
  while ((next < targets.size() || !running.empty()) && !stop.load()) {
    while (next < targets.size()) {
      auto best = load.end();
      for (auto it = load.begin(); it != load.end(); ++it) {
        if (it->second < per_source && (best == load.end() || it->second < best->second)) {
          best = it;
        }
      }
      if (best == load.end()) {
        break;
      }
      auto proc = start_push(transport, options, best->first, targets[next]);
      if (proc.started()) {
        const pid_t pid = proc.child.pid();
        running.emplace(pid, Push{best->first, targets[next], std::move(proc), {}});
        ++best->second;
      } else {
        core::NodeResult r;
        r.host = targets[next];
        r.error = "cannot start a push";
        results.push_back(r);
      }
      ++next;
    }
    const pid_t pid = running.empty() ? -1 : await_push(running, stop);
    if (pid <= 0) {
      break;
    }
    auto it = running.find(pid);
    const auto r = push_result(it->second);
    --load[it->second.source];
    if (r.ok()) {
      load[r.host] = 0;  // it has the copy now: a new source
    }
    results.push_back(r);
    running.erase(it);
  }
  for (auto& [pid, push] : running) {  // interrupted
    push.proc.terminate();
    (void)push.proc.child.wait();
    push.proc.out.reset();
    core::NodeResult r;
    r.host = push.target;
    r.error = "interrupted";
    results.push_back(r);
  }
  return results;
}

}  // namespace ezpz::sys

namespace ezpz::sys {

PosixBroadcaster::PosixBroadcaster(core::Transport& transport, StopSignals& stop)
    : transport_(transport), stop_(stop) {}

PosixBroadcaster::~PosixBroadcaster() {
  abandon_relays();
}

void PosixBroadcaster::start_nodes(const core::HostList& hosts, const std::vector<core::RelayNode>& tree,
                                   const core::BroadcastSpec& spec) {
  abandon_relays();
  stop_.arm();
  opening_cancel_ = false;
  opened_.clear();
  relays_started_ = false;
  if (!tree.empty()) {
    started_ = std::make_unique<Fanout>(transport_, spec.this_host, spec);
    started_tree_ = core::encode_tree(tree);
  }
  // The starter owns the transport until joined: this node's own work touches neither.
  starting_ = std::thread([this, hosts, tree, spec, fan = started_.get()] {
    opened_ = transport_.open_nodes(hosts, spec.reach, &stop_.flag(), &opening_cancel_);
    if (fan != nullptr && !opening_cancel_.load() && !stop_.flag().load()) {
      start_stream(*fan, tree);
      relays_started_ = true;
    }
  });
}

std::map<std::string, std::string> PosixBroadcaster::nodes_opened() {
  await_starter();  // the starter writes opened_ until then
  return Broadcaster::nodes_opened();
}

std::vector<core::NodeResult> PosixBroadcaster::broadcast(const std::string& root, const std::string& name,
                                                          const std::vector<core::RelayNode>& tree,
                                                          const core::BroadcastSpec& spec,
                                                          const core::ProgressFn& progress,
                                                          const core::ResultFn& on_result, core::StreamStats* stats) {
  stop_.arm();
  if (auto fan = take_started(tree)) {  // start_nodes started them while this node worked
    return stream_tree(*fan, root, name, spec, progress, on_result, stop_.flag(), stats);
  }
  return broadcast_tree(transport_, root, name, tree, spec, progress, on_result, stop_.flag(), stats);
}

void PosixBroadcaster::abandon_relays() {
  if (starting_.joinable()) {
    opening_cancel_ = true;  // this node's copy failed: no agent and no relay is waited for any more
    if (started_) {
      started_->cancel();
    }
  }
  await_starter();
  if (started_) {
    // Their stream ends before its end unit: each relay removes its work and reports failure.
    started_->terminate();
    started_->end(false);
    started_.reset();  // each child's ends close; the children are reaped
  }
  started_tree_.clear();
}

std::unique_ptr<Fanout> PosixBroadcaster::take_started(const std::vector<core::RelayNode>& tree) {
  await_starter();
  if (!started_ || !relays_started_ || started_tree_ != core::encode_tree(tree)) {
    abandon_relays();
    return nullptr;
  }
  started_tree_.clear();
  return std::exchange(started_, nullptr);
}

}  // namespace ezpz::sys
