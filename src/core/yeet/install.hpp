// How a node puts a new copy at its destination: the same steps, through the same ports, on the
// head (`ezpz yeet`, install_here) and on every relay (`ezpz __yeet-relay`): a private work
// directory beside the destination, the new tree built in it, then committed atomically.
#pragma once

#include <string>
#include <vector>

#include "core/base/expected.hpp"
#include "core/yeet/transfer.hpp"

namespace ezpz::core {

/// Where a node installs, and who asks.
struct InstallTarget {
  std::string destination;
  bool force = false;              ///< replace a destination yeet did not make (core::check_replaceable)
  std::string host;                ///< the node, named in errors ("" on the head)
  std::string user;                ///< who runs it (named in the remedy for another user's destination)
  WorkLock lock = WorkLock::wait;  ///< the head waits for another yeet to this destination; a relay does not
};

/// What is in a work directory when it is placed: a tree built or received whole, or what a
/// relay received, which may be a delta bundle to apply to the copy this node already has.
enum class Received { tree, stream };

class NodeInstall {
 public:
  NodeInstall(Trees& trees, Staging& staging, Manifests& manifests, InstallTarget target)
      : trees_(trees), staging_(staging), manifests_(manifests), target_(std::move(target)) {}

  /// 1. The work directory beside the destination (its parents made; earlier runs' work swept; a
  /// watcher removes it if this process is killed). Refused, nothing touched, when what is at
  /// the destination is not yeet's to replace.
  [[nodiscard]] Expected<std::string> open();
  /// 2. The tree in `work` in place of the destination, atomically; a relay's delta bundle is
  /// applied to this node's copy first (an error of kind needs_full_copy when it does not fit:
  /// the head sends the whole tree instead). The copy it replaces becomes the spare when the
  /// delta (or the caller, for a tree it made from it: `previous`) says so. A failure removes
  /// the work. Returns the delta's steps (StepTimes; none for a tree).
  [[nodiscard]] Expected<StepTimes> place(const std::string& work, Received what,
                                          Previous previous = Previous::replace);
  /// A relay heard that its stream will be a delta bundle from the manifest `base_digest`: the
  /// clone `place` applies it to starts now, in the background, beside `work`.
  void prepare(const std::string& work, const std::string& base_digest) {
    manifests_.prepare_apply(target_.destination, applied(work), base_digest);
    prepared_ = true;
  }
  /// The work of a run that failed before `place`, removed (and a clone prepare started).
  void abandon(const std::string& work) {
    staging_.discard(work);
    if (prepared_) {
      staging_.discard(applied(work));
    }
  }
  /// What the steps could not remove (an earlier run's work, the previous tree), each once.
  [[nodiscard]] std::vector<std::string> take_warnings() { return staging_.take_warnings(); }
  [[nodiscard]] const InstallTarget& target() const { return target_; }

 private:
  /// Where a delta bundle received into `work` is applied (a name the watcher knows).
  static std::string applied(const std::string& work) { return work + ".apply"; }
  Trees& trees_;
  Staging& staging_;
  Manifests& manifests_;
  InstallTarget target_;
  bool prepared_ = false;  ///< prepare() started a clone beside the work
};

}  // namespace ezpz::core
