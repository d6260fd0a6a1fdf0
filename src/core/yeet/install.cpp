#include "core/yeet/install.hpp"

#include "core/yeet/plan.hpp"

namespace ezpz::core {

Expected<std::string> NodeInstall::open() {
  const auto& dst = target_.destination;
  // What is there now: yeet replaces only its own copies and envs (unless --force), and only
  // what this user may move aside.
  EZPZ_TRY(check_replaceable(dst, trees_.inspect_destination(dst), target_.force, target_.host, target_.user));
  auto work = staging_.make_staging(dst, target_.lock);
  if (!work && !target_.host.empty()) {
    return failure(work.error().message + " (on " + target_.host + ")");
  }
  return work;
}

Expected<StepTimes> NodeInstall::place(const std::string& work, Received what, Previous previous) {
  const auto& dst = target_.destination;
  // A delta bundle becomes this node's copy plus the changes, in a second work directory.
  std::string tree = work;
  Expected<BundleApplied> built = BundleApplied{};
  if (what == Received::stream && manifests_.is_bundle(work)) {
    tree = applied(work);
    built = manifests_.apply_bundle(work, dst, tree);
  } else if (prepared_) {
    staging_.discard(applied(work));  // a whole tree after all: a clone prepare made is not needed
  }
  if (built && built->unchanged) {  // this copy already is the new one: nothing to put in place
    staging_.discard(work);
    staging_.discard(tree);
    return built->steps;
  }
  if (built && tree != work) {
    previous = built->previous;  // made from this node's copy: the delta says what it shares
  }
  Expected<void> placed = built ? staging_.commit(tree, dst, previous) : Expected<void>(built.error());
  if (!placed || tree != work) {
    staging_.discard(work);  // committed, `work` now names nothing (or the bundle, used)
  }
  if (!placed && tree != work) {
    staging_.discard(tree);
  }
  if (!placed) {
    return placed.error();
  }
  return built->steps;
}

}  // namespace ezpz::core
