// The relays one node streams to (the head's first level, or a relay's children). What it
// sends is also spooled to an unlinked file beside the destination, so when a child fails the
// child's own children are re-attached here at once: each gets a new relay, fed from the
// spool's start and then live by a thread of its own, while the stream goes on.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/reach/transport.hpp"
#include "core/yeet/broadcast_spec.hpp"
#include "core/yeet/outcome.hpp"
#include "core/yeet/relay_tree.hpp"
#include "core/yeet/transfer.hpp"
#include "sys/os/fd_io.hpp"

namespace ezpz::sys {

class Fanout {
 public:
  /// `this_host` names this node in results of re-attached subtrees (`reattached_to`).
  Fanout(core::Transport& transport, std::string this_host, const core::BroadcastSpec& spec);
  ~Fanout();
  Fanout(const Fanout&) = delete;
  Fanout& operator=(const Fanout&) = delete;

  /// Start a relay on each node of `tree` and wait until each is ready, all within the stall
  /// timeout; the children of one that is not are re-attached here.
  void start(const std::vector<core::RelayNode>& tree);
  /// Start `ezpz __yeet-send` on `peer` streaming its copy to `tree` (a repair): its results
  /// are collected like a child's.
  void start_sender(const std::string& peer, const std::vector<core::RelayNode>& tree);
  /// Stream one unit (the magic, a frame's header and data, the end and digest) to every live
  /// child (and the spool). A child that cannot take it is dropped and its children
  /// re-attached. A child sent nothing for a second gets a keepalive header between units.
  void send(const void* head, std::size_t head_size, const void* data = nullptr, std::size_t size = 0);
  /// How a stream ended: whole (re-attached children get the rest) or abandoned (they are stopped).
  enum class Ending { complete, abandoned };
  /// The stream is over. Returns at once; collect() waits for the feeding threads.
  void end(Ending ending);
  /// SIGTERM to every child (interrupted).
  void terminate();
  /// From another thread: a start() under way stops waiting for its children (at once, or
  /// within a tenth of a second) and starts no more.
  void cancel() { cancelled_ = true; }
  /// After end(): read every child's result lines (`on_result` as each arrives), reap them.
  /// One result per host of the tree; hosts nobody reported on failed.
  std::vector<core::NodeResult> collect(const std::string& why_missing, const core::ResultFn& on_result);

 private:
  struct Child;
  /// A child fed by send() from the start, or re-attached (fed from the spool by a thread).
  enum class Feed { live, spool };
  Child& spawn(const core::RelayNode& node, Feed from);
  void drop(Child& c);
  /// When a child started now must have said it is ready: the stall timeout from now.
  [[nodiscard]] std::chrono::steady_clock::time_point ready_deadline() const;
  /// Why a child that did not say it was ready by `deadline` is dropped ("" when it ended).
  [[nodiscard]] std::string not_ready(std::chrono::steady_clock::time_point deadline) const;
  void feed(Child& c);
  void keep_alive(const std::stop_token& stop);
  void open_spool();
  void join_feeders();

  core::Transport& transport_;
  std::string this_host_;
  const core::BroadcastSpec& spec_;
  std::vector<std::unique_ptr<Child>> children_;
  std::vector<Child*> fed_;  ///< the children start() started, fed by send(): what the ticker sees
  std::jthread ticker_;      ///< keepalives to them (keep_alive), from start() to end()
  OwnedFd spool_;            ///< unlinked: what send() streamed, for re-attached children
  std::mutex mutex_;         ///< guards the spool's progress below
  std::condition_variable more_;
  unsigned long long spooled_ = 0;
  unsigned long long last_at_ = 0;  ///< where the end unit ends in the spool (0: not there yet)
  bool ended_ = false;
  bool complete_ = false;
  bool spool_failed_ = false;
  std::atomic<bool> cancelled_ = false;  ///< cancel(): start() stops waiting
};

}  // namespace ezpz::sys
