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
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/log.hpp"
#include "core/base/strings.hpp"
#include "sys/broadcast/fanout.hpp"
#include "sys/broadcast/heartbeat.hpp"
#include "sys/broadcast/stream_input.hpp"
#include "sys/fs/adaptive_zstd.hpp"
#include "sys/fs/archive.hpp"
#include "sys/fs/tree.hpp"
#include "sys/os/fd_io.hpp"

namespace ezpz::sys {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

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
  fan.end(complete ? Fanout::Ending::complete : Fanout::Ending::abandoned);
  return fan.collect(packed ? "its relay ended without a report" : "the head stopped sending", on_result);
}

std::vector<core::NodeResult> send_from_peer(core::Transport& transport, const std::string& peer,
                                             const std::vector<core::RelayNode>& tree,
                                             const core::BroadcastSpec& options, const core::ResultFn& on_result) {
  Fanout fan(transport, options.this_host, options);
  fan.start_sender(peer, tree);
  fan.end(Fanout::Ending::complete);
  auto results = fan.collect("the copy from " + peer + " ended without a report", [&](const core::NodeResult& r) {
    if (r.host != peer && on_result) {
      on_result(r);
    }
  });
  std::erase_if(results, [&](const core::NodeResult& r) { return r.host == peer; });
  return results;
}

namespace {

/// The parent's stream as a relay reads it: frames from stdin (or the agent's sealed channel),
/// each forwarded to the children as it arrives, its SHA-256 checked at the end. A parent that
/// says nothing at all for --parent-silence is gone without an end of file (its node, or a link
/// on the way, died): the relay gives up rather than hold the work directory for ever.
class Inbound {
 public:
  /// `on_announce`: the head announced a delta bundle starting from the manifest with this
  /// SHA-256 (hex), before its data (core::kAnnounceLength).
  using Announced = std::function<void(const std::string&)>;
  Inbound(Fanout& fan, const core::BroadcastSpec& options, const std::atomic<bool>& stop, Announced on_announce)
      : fan_(fan),
        options_(options),
        stop_(stop),
        input_(options.sealed_stdin_fd, 0, &stop),
        on_announce_(std::move(on_announce)) {
    sha256_init(&digest_);
  }
  /// The stream's header, forwarded; false when the stream is not ezpz's.
  bool start(bool failed) {
    char magic[16] = {};
    if (!read_in(magic, core::kStreamMagic.size(), failed) ||
        std::string_view(magic, core::kStreamMagic.size()) != core::kStreamMagic) {
      return false;
    }
    fan_.send(magic, core::kStreamMagic.size());
    return true;
  }
  /// The next frame's data (empty at the end of the stream); nullopt when the stream broke.
  /// `failed`: this node's work already failed (a silent parent is then not the first cause).
  std::optional<std::string_view> next_frame(bool failed) {
    if (ended_) {
      return std::string_view();
    }
    unsigned char header[4];
    auto length = core::kKeepaliveLength;
    while (length == core::kKeepaliveLength || length == core::kAnnounceLength) {
      if (stop_.load() || !read_in(header, 4, failed)) {
        return std::nullopt;
      }
      length = core::frame_length(header);  // a keepalive: our own children hear from our Fanout
      if (length == core::kAnnounceLength && !announced(header, failed)) {
        return std::nullopt;
      }
    }
    if (length == 0) {
      return finish(header, failed);
    }
    if (length > (64U << 20)) {
      return std::nullopt;  // not our stream
    }
    frame_.resize(length);
    if (!read_in(frame_.data(), length, failed)) {
      return std::nullopt;
    }
    fan_.send(header, sizeof(header), frame_.data(), length);
    sha256_update(&digest_, length, reinterpret_cast<const std::uint8_t*>(frame_.data()));  // NOLINT
    bytes_ += length;
    return std::string_view(frame_);
  }
  /// The rest of the stream read and forwarded (the children still get it whatever happened
  /// here); false when it broke off first.
  bool drain(bool failed) {
    while (!ended_) {
      if (!next_frame(failed)) {
        return false;
      }
    }
    return true;
  }
  /// Why the stream broke, when it did ("" otherwise): the parent gone silent, or the input's cause.
  [[nodiscard]] std::string why() const {
    if (parent_silent_) {
      return "its parent sent nothing for " + std::to_string(static_cast<int>(options_.parent_silence_s)) +
             " s: gone (its node or link failed); work discarded";
    }
    return input_.why();
  }
  [[nodiscard]] bool ended() const { return ended_; }
  [[nodiscard]] bool digest_ok() const { return digest_ok_; }
  [[nodiscard]] unsigned long long bytes() const { return bytes_; }

 private:
  bool read_in(void* data, std::size_t size, bool failed) {
    const int silence_ms =
        options_.parent_silence_s > 0 ? static_cast<int>(std::min(options_.parent_silence_s, 1e6) * 1000) : -1;
    const auto got = broken_ ? ReadResult::ended : input_.read(data, size, silence_ms);
    parent_silent_ = parent_silent_ || (got == ReadResult::timed_out && !failed);
    broken_ = got != ReadResult::ok;
    return !broken_;
  }
  /// An announced delta: its base's digest forwarded to the children, and said.
  bool announced(const unsigned char (&header)[4], bool failed) {
    unsigned char base[core::kDigestSize];
    if (!read_in(base, sizeof(base), failed)) {
      return false;
    }
    fan_.send(header, sizeof(header), base, sizeof(base));
    if (on_announce_) {
      on_announce_(core::to_hex(base, sizeof(base)));
    }
    return true;
  }
  /// The end frame: the sender's SHA-256, forwarded and compared with ours.
  std::optional<std::string_view> finish(const unsigned char (&header)[4], bool failed) {
    unsigned char sum[core::kDigestSize];
    unsigned char want[core::kDigestSize];
    if (!read_in(want, sizeof(want), failed)) {
      return std::nullopt;
    }
    fan_.send(header, sizeof(header), want, sizeof(want));
    sha256_digest(&digest_, sizeof(sum), sum);
    digest_ok_ = std::memcmp(sum, want, sizeof(sum)) == 0;
    ended_ = true;
    return std::string_view();
  }

  Fanout& fan_;
  const core::BroadcastSpec& options_;
  const std::atomic<bool>& stop_;
  StreamInput input_;
  Announced on_announce_;
  sha256_ctx digest_{};
  std::string frame_;
  unsigned long long bytes_ = 0;
  bool ended_ = false;
  bool digest_ok_ = false;
  bool parent_silent_ = false;  ///< and that is what went wrong first
  bool broken_ = false;         ///< once a read failed, never wait on the parent again
};

/// What the install steps could not remove, on stderr (the head's, through ssh), named by node.
void say_warnings(core::NodeInstall& install, const std::string& host) {
  for (const auto& left : install.take_warnings()) {
    log::line("ezpz: warning: " + host + ": " + left);
  }
}

/// The stream received whole into `work`: its single top directory lifted, then placed by
/// `install` (a delta bundle applied to this node's copy first). True when the delta could not
/// apply to this copy (the head sends it everything instead). Its steps are added to `steps`
/// (the delta's, then swap_s: the rest, the commit).
bool install_received(core::NodeInstall& install, const std::string& work, std::string& error, core::StepTimes& steps) {
  if (error.empty()) {
    if (auto lifted = lift_single_directory(work); !lifted) {
      error = lifted.error().message;
    }
  }
  if (!error.empty()) {
    if (!work.empty()) {
      install.abandon(work);
    }
    return false;
  }
  const auto start = Clock::now();
  auto placed = install.place(work, core::Received::stream);
  if (!placed) {
    error = placed.error().message;
    return placed.error().kind == ErrorKind::needs_full_copy;
  }
  double applied = 0;
  for (const auto& s : *placed) {
    steps.push_back(s);
    applied += s.first == "early_s" ? 0 : s.second;  // that one before the stream ended
  }
  steps.emplace_back("swap_s", std::max(0.0, seconds_since(start) - applied));
  return false;
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
              const std::vector<core::RelayNode>& children_spec, const core::BroadcastSpec& options,
              core::NodeInstall& install, std::ostream& out, const std::atomic<bool>& stop) {
  ::signal(SIGPIPE, SIG_IGN);
  const auto start = Clock::now();
  core::NodeResult me;
  me.host = this_host;
  out << core::kReadyLine << std::endl;  // the parent starts streaming; the pipe holds it meanwhile
  Fanout fan(transport, this_host, options);
  fan.start(children_spec);  // within our stall timeout: the parent streams from our READY on
  me.steps.emplace_back("children_s", seconds_since(start));
  // The work directory beside the destination, as the head makes its own (core::NodeInstall).
  const auto& dst = options.destination;
  std::string error;
  auto step_start = Clock::now();
  auto opened = install.open();
  me.steps.emplace_back("open_s", seconds_since(step_start));
  step_start = Clock::now();
  const std::string staging = opened ? *opened : std::string();
  if (!opened) {
    error = opened.error().message;
  }
  say_warnings(install, this_host);  // on stderr: the head's, through ssh
  log::info("relay: reading the stream into " + (opened ? staging : dst) + (error.empty() ? "" : ": " + error));

  // Read frames from stdin, forward each, hand the data to the extractor.
  // A delta announced: this node's clone of its copy starts now (NodeInstall::prepare).
  Inbound in(fan, options, stop, [&](const std::string& base) {
    if (opened) {
      install.prepare(staging, base);
    }
  });
  const bool stream_ok = in.start(!error.empty());
  if (!stream_ok) {
    error = "the stream did not start with ezpz's header";
  } else if (error.empty()) {
    auto extracted = extract_archive_from([&] { return in.next_frame(!error.empty()); }, "the stream", staging, stop);
    if (!extracted) {
      error = extracted.error().message;
    }
  }
  // Whatever happened here, the children still get the rest of the stream.
  if (stream_ok && !in.drain(!error.empty()) && error.empty()) {
    error = "the stream broke off before its end";
  }
  if (auto why = in.why(); !why.empty()) {
    error = why;  // the cause of whatever broke after it
  }
  const bool ended = in.ended();
  me.bytes = in.bytes();
  me.steps.emplace_back("stream_s", seconds_since(step_start));
  fan.end(ended ? Fanout::Ending::complete : Fanout::Ending::abandoned);  // re-attached ones get the rest
  // From here on the parent only reads: a line a second tells it this relay is still at work.
  ResultLines say(out);
  me.digest_ok = in.digest_ok();
  if (error.empty() && !me.digest_ok) {
    error = "the stream's SHA-256 does not match: data was damaged on the way";
  }
  const bool full_copy_needed = install_received(install, staging, error, me.steps);
  say_warnings(install, this_host);
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
  start_steps_.clear();
  announce_.clear();
  announce_ready_ = false;
  starting_ = std::thread([this, hosts, tree, spec, fan = started_.get()] {
    auto t = Clock::now();
    opened_ = transport_.open_nodes(hosts, spec.reach, &stop_.flag(), &opening_cancel_);
    start_steps_.emplace_back("reach_s", seconds_since(t));
    t = Clock::now();
    if (fan != nullptr && !opening_cancel_.load() && !stop_.flag().load()) {
      start_stream(*fan, tree);
      relays_started_ = true;
      start_steps_.emplace_back("relays_s", seconds_since(t));
      const std::lock_guard lock(announcing_);  // a delta announced meanwhile goes out now
      if (!announce_.empty()) {
        fan->send(announce_.data(), announce_.size());
      }
      announce_ready_ = true;
    }
  });
}

void PosixBroadcaster::announce_delta(const std::string& base_digest) {
  const std::lock_guard lock(announcing_);
  if (!started_ || !announce_.empty()) {
    return;
  }
  unsigned char base[core::kDigestSize];
  if (!core::from_hex(base_digest, base, sizeof(base))) {
    return;  // not a SHA-256: nothing to announce
  }
  const auto header = core::frame_header(core::kAnnounceLength);
  announce_.assign(header.begin(), header.end());
  announce_.append(reinterpret_cast<const char*>(base), sizeof(base));  // NOLINT(*-reinterpret-cast): bytes
  if (announce_ready_) {  // the starter is done with the relays: this thread streams to them now
    started_->send(announce_.data(), announce_.size());
  }
}

core::StepTimes PosixBroadcaster::start_steps() {
  await_starter();  // the starter writes start_steps_ until then
  return start_steps_;
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
    started_->end(Fanout::Ending::abandoned);
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
