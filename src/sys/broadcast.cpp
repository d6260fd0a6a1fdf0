#include "sys/broadcast.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <functional>
#include <map>
#include <thread>

#include <fcntl.h>
#include <nettle/sha2.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/shell.hpp"
#include "sys/adaptive_zstd.hpp"
#include "sys/archive.hpp"
#include "sys/fd_io.hpp"
#include "sys/remote.hpp"
#include "sys/tree.hpp"

namespace ezpz::sys {
namespace {

using Clock = std::chrono::steady_clock;

/// How long a node may take to connect and start ezpz (ssh's own timeouts usually end it sooner).
constexpr int kReadyTimeoutS = 120;

/// A relay started over ssh: its stdin takes the stream, its stdout gives result lines.
struct Child {
  core::RelayNode node;
  pid_t pid = -1;
  int in = -1;   ///< we write the stream here
  int out = -1;  ///< we read result lines here
  bool alive = true;
  std::string early;  ///< lines read before the relay said it was ready (a connection error)
};

Child spawn_relay(const core::RelayNode& node, const BroadcastOptions& options) {
  Child c;
  c.node = node;
  auto p = start_remote(node.host, core::remote_command(options, core::relay_args(options, node), true), options,
                        node.host, true);
  c.pid = p.pid;
  c.in = p.in;
  c.out = p.out;
  c.alive = p.pid > 0;
  return c;
}

/// Every child's first line: ready (or shipped this binary first). A child that is not
/// ready is dropped; what it said is kept for its result.
void await_children(std::vector<Child>& children) {
  for (auto& c : children) {
    if (!c.alive) {
      continue;
    }
    RemoteProcess p{c.pid, c.in, c.out};
    if (!await_ready(p, c.early, kReadyTimeoutS)) {
      c.alive = false;
      ::close(c.in);
      c.in = -1;
      ::kill(c.pid, SIGTERM);
    }
  }
}

/// Send bytes to every live child; a child that cannot take them is dropped.
void send_raw(std::vector<Child>& children, const void* data, std::size_t size) {
  for (auto& c : children) {
    if (c.alive && !write_all(c.in, data, size)) {
      c.alive = false;
      ::close(c.in);
      c.in = -1;
    }
  }
}

/// Send one frame (header + data) to every live child; a child that cannot take it is dropped.
void forward(std::vector<Child>& children, const unsigned char* header, const void* data, std::size_t size) {
  for (auto& c : children) {
    if (!c.alive) {
      continue;
    }
    if (!write_all(c.in, header, 4) || (size > 0 && !write_all(c.in, data, size))) {
      c.alive = false;
      ::close(c.in);
      c.in = -1;
    }
  }
}

/// Close the children's stdin, then read their result lines as they arrive (poll), calling
/// `on_result` for each; reap them. Hosts a child never reported on failed.
std::vector<core::NodeResult> collect(std::vector<Child>& children, const std::string& why_missing,
                                      const std::function<void(const core::NodeResult&)>& on_result) {
  std::vector<core::NodeResult> results;
  std::vector<std::string> pending(children.size());
  std::vector<std::map<std::string, core::NodeResult>> reported(children.size());
  auto take_lines = [&](std::size_t i) {
    for (auto nl = pending[i].find('\n'); nl != std::string::npos; nl = pending[i].find('\n')) {
      if (auto r = core::decode_result(pending[i].substr(0, nl))) {
        reported[i][r->host] = *r;
        if (on_result) {
          on_result(*r);
        }
      }
      pending[i].erase(0, nl + 1);
    }
  };
  for (std::size_t i = 0; i < children.size(); ++i) {
    pending[i] = children[i].early;
    take_lines(i);
  }
  for (auto& c : children) {
    if (c.in >= 0) {
      ::close(c.in);
      c.in = -1;
    }
  }
  while (true) {
    std::vector<pollfd> fds;
    std::vector<std::size_t> index;
    for (std::size_t i = 0; i < children.size(); ++i) {
      if (children[i].out >= 0) {
        fds.push_back({children[i].out, POLLIN, 0});
        index.push_back(i);
      }
    }
    if (fds.empty()) {
      break;
    }
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      break;
    }
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
        continue;
      }
      const auto i = index[k];
      char buf[4096];
      const auto n = ::read(children[i].out, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0) {
        ::close(children[i].out);
        children[i].out = -1;
        continue;
      }
      pending[i].append(buf, static_cast<std::size_t>(n));
      take_lines(i);
    }
  }
  for (std::size_t i = 0; i < children.size(); ++i) {
    auto& c = children[i];
    if (c.pid > 0) {
      int status = 0;
      ::waitpid(c.pid, &status, 0);
    }
    for (const auto& host : core::subtree_hosts(c.node)) {
      auto it = reported[i].find(host);
      if (it != reported[i].end()) {
        results.push_back(it->second);
        continue;
      }
      core::NodeResult r;
      r.host = host;
      r.error = host == c.node.host ? why_missing : "no report: its parent relay " + c.node.host + " failed";
      if (on_result) {
        on_result(r);
      }
      results.push_back(r);
    }
  }
  return results;
}

}  // namespace

std::vector<core::NodeResult> broadcast_tree(const std::string& root, const std::string& name,
                                             const std::vector<core::RelayNode>& tree, const BroadcastOptions& options,
                                             const core::ProgressFn& progress, const core::ResultFn& on_result,
                                             const std::atomic<bool>& stop, core::StreamStats* stats) {
  ::signal(SIGPIPE, SIG_IGN);
  std::vector<Child> children;
  for (const auto& node : tree) {
    children.push_back(spawn_relay(node, options));
  }
  await_children(children);
  sha256_ctx digest;
  sha256_init(&digest);
  send_raw(children, core::kStreamMagic.data(), core::kStreamMagic.size());
  unsigned long long sent = 0;
  ArchiveSink sink = [&](const void* data, std::size_t size) {
    if (stop.load()) {
      return false;
    }
    const auto header = core::frame_header(static_cast<std::uint32_t>(size));
    forward(children, header.data(), data, size);
    sha256_update(&digest, size, static_cast<const std::uint8_t*>(data));
    sent += size;
    if (progress) {
      progress(sent);
    }
    return true;
  };
  // libarchive writes plain tar; the stream is compressed here, at a level that follows the link.
  AdaptiveZstd zstd(sink, options.stream_level, std::max(1U, std::thread::hardware_concurrency()));
  ArchiveSink tar_sink = [&](const void* data, std::size_t size) { return !stop.load() && zstd.write(data, size); };
  const bool packed = pack_tree_to(root, name, tar_sink, core::ArchiveFormat::tar, {}, {}, stop) && zstd.finish();
  if (stats != nullptr) {
    *stats = core::StreamStats{sent, zstd.min_level_used(), zstd.max_level_used(), zstd.level()};
  }
  if (packed && !stop.load()) {
    const auto end = core::frame_header(0);
    unsigned char sum[core::kDigestSize];
    sha256_digest(&digest, sizeof(sum), sum);
    forward(children, end.data(), sum, sizeof(sum));
  }
  if (!packed || stop.load()) {
    for (auto& c : children) {
      if (c.pid > 0) {
        ::kill(c.pid, SIGTERM);
      }
    }
  }
  return collect(children, packed ? "its relay (ssh) ended without a report" : "the head stopped sending", on_result);
}

std::vector<core::NodeResult> send_from_peer(const std::string& peer, const std::vector<core::RelayNode>& tree,
                                             const BroadcastOptions& options, const core::ResultFn& on_result) {
  ::signal(SIGPIPE, SIG_IGN);
  std::vector<Child> one(1);
  one[0].node = core::RelayNode{peer, tree};
  auto p =
      start_remote(peer, core::remote_command(options, core::send_args(options, tree), false), options, peer, false);
  one[0].pid = p.pid;
  one[0].out = p.out;
  one[0].alive = p.pid > 0;
  auto results = collect(one, "the copy from " + peer + " ended without a report", [&](const core::NodeResult& r) {
    if (r.host != peer && on_result) {
      on_result(r);
    }
  });
  std::erase_if(results, [&](const core::NodeResult& r) { return r.host == peer; });
  return results;
}

int run_relay(const std::string& this_host, const std::vector<core::RelayNode>& children_spec,
              const BroadcastOptions& options, std::ostream& out, const std::atomic<bool>& stop) {
  ::signal(SIGPIPE, SIG_IGN);
  const auto start = Clock::now();
  core::NodeResult me;
  me.host = this_host;
  out << core::kReadyLine << std::endl;  // the parent starts streaming; the pipe holds it meanwhile
  std::vector<Child> children;
  for (const auto& node : children_spec) {
    children.push_back(spawn_relay(node, options));
  }
  await_children(children);
  // The staging directory beside the destination.
  const auto& dst = options.destination;
  const std::string staging = dst + ".ezpz-tmp-" + std::to_string(::getpid());
  std::string error;
  for (std::size_t p = dst.find('/', 1); p != std::string::npos; p = dst.find('/', p + 1)) {
    ::mkdir(dst.substr(0, p).c_str(), 0755);
  }
  remove_stale_staging(dst);
  if (::mkdir(staging.c_str(), 0755) != 0) {
    error = "cannot create " + staging + ": " + std::strerror(errno);
  }

  // Read frames from stdin, forward each, hand the data to the extractor.
  char magic[16] = {};
  bool stream_ok = read_exact(0, magic, core::kStreamMagic.size()) &&
                   std::string_view(magic, core::kStreamMagic.size()) == core::kStreamMagic;
  if (stream_ok) {
    send_raw(children, magic, core::kStreamMagic.size());
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
    if (stop.load() || !read_exact(0, header, 4)) {
      return std::nullopt;
    }
    const auto length = core::frame_length(header);
    if (length == 0) {
      unsigned char sum[core::kDigestSize];
      unsigned char want[core::kDigestSize];
      if (!read_exact(0, want, sizeof(want))) {
        return std::nullopt;
      }
      forward(children, header, want, sizeof(want));
      sha256_digest(&digest, sizeof(sum), sum);
      digest_ok = std::memcmp(sum, want, sizeof(sum)) == 0;
      ended = true;
      return std::string_view();
    }
    if (length > (64U << 20)) {
      return std::nullopt;  // not our stream
    }
    frame.resize(length);
    if (!read_exact(0, frame.data(), length)) {
      return std::nullopt;
    }
    forward(children, header, frame.data(), length);
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
  if (error.empty() && !digest_ok) {
    error = "the stream's SHA-256 does not match: data was damaged on the way";
  }
  me.digest_ok = digest_ok;
  if (error.empty()) {
    if (auto lifted = lift_single_directory(staging); !lifted) {
      error = lifted.error().message;
    }
  }
  if (error.empty()) {
    if (auto r = commit_tree(staging, dst); !r) {
      error = r.error().message;
    }
  }
  if (!error.empty()) {
    remove_tree(staging);
  }
  me.ok = error.empty();
  me.error = error;
  me.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  // This node's line at once, then each line of the subtree as it arrives: the head shows
  // nodes finishing live.
  out << core::encode_result(me) << std::endl;
  collect(children, "its relay (ssh) ended without a report",
          [&out](const core::NodeResult& r) { out << core::encode_result(r) << std::endl; });
  return me.ok ? 0 : 1;
}

}  // namespace ezpz::sys

namespace ezpz::sys {

std::vector<core::NodeResult> greedy_broadcast(const core::HostList& targets, const BroadcastOptions& options,
                                               int per_source, const std::atomic<bool>& stop) {
  ::signal(SIGPIPE, SIG_IGN);
  struct Push {
    std::string source;
    std::string target;
    int out = -1;
  };
  std::map<std::string, int> load{{"", 0}};  // "" = this node
  std::map<pid_t, Push> running;
  std::vector<core::NodeResult> results;
  std::size_t next = 0;
  auto start_push = [&](const std::string& source, const std::string& target) {
    const auto send = core::send_args(options, core::relay_tree({target}, 1));
    RemoteProcess p;
    if (source.empty()) {  // from this node: run ezpz __yeet-send here
      std::vector<std::string> argv = {options.self_exe};
      argv.insert(argv.end(), send.begin(), send.end());
      int out[2];
      if (::pipe2(out, O_CLOEXEC) != 0) {
        return false;
      }
      std::vector<char*> args;
      for (auto& a : argv) {
        args.push_back(a.data());
      }
      args.push_back(nullptr);
      p.pid = ::fork();
      if (p.pid == 0) {
        ::dup2(out[1], 1);
        ::signal(SIGPIPE, SIG_DFL);
        ::execv(args[0], args.data());
        ::_exit(127);
      }
      ::close(out[1]);
      p.out = out[0];
    } else {  // from a node that has the copy (and this binary: it ran a relay)
      p = start_remote(source, core::remote_command(options, send, false), options, target, false);
    }
    if (p.pid < 0) {
      if (p.out >= 0) {
        ::close(p.out);
      }
      return false;
    }
    running[p.pid] = Push{source, target, p.out};
    ++load[source];
    return true;
  };
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
      if (!start_push(best->first, targets[next])) {
        core::NodeResult r;
        r.host = targets[next];
        r.error = "cannot start a push";
        results.push_back(r);
      }
      ++next;
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) {
        continue;
      }
      break;
    }
    auto it = running.find(pid);
    if (it == running.end()) {
      continue;
    }
    std::string text;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(it->second.out, buf, sizeof(buf))) > 0) {
      text.append(buf, static_cast<std::size_t>(n));
    }
    ::close(it->second.out);
    core::NodeResult r;
    r.host = it->second.target;
    r.error = "the push from " + (it->second.source.empty() ? std::string("this node") : it->second.source) +
              " ended without a report";
    for (std::size_t start = 0; start < text.size();) {
      auto nl = text.find('\n', start);
      if (auto got = core::decode_result(text.substr(start, nl == std::string::npos ? nl : nl - start));
          got && got->host == r.host) {
        r = *got;
      }
      start = nl == std::string::npos ? text.size() : nl + 1;
    }
    --load[it->second.source];
    if (r.ok) {
      load[r.host] = 0;  // it has the copy now: a new source
    }
    results.push_back(r);
    running.erase(it);
  }
  for (auto& [pid, push] : running) {  // interrupted
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
    ::close(push.out);
    core::NodeResult r;
    r.host = push.target;
    r.error = "interrupted";
    results.push_back(r);
  }
  return results;
}

}  // namespace ezpz::sys
