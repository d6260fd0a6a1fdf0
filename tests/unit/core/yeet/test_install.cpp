#include <catch2/catch.hpp>

#include "cli/fake_transfer.hpp"
#include "core/yeet/install.hpp"

using namespace ezpz;
using namespace ezpz::core;

namespace {

struct Node {
  test::FakeTrees trees;
  test::FakeStaging staging;
  test::FakeManifests manifests;
  NodeInstall install(InstallTarget target) { return {trees, staging, manifests, std::move(target)}; }
};

InstallTarget relay_target() {
  return {"/tmp/u/env", false, "n3", "u", WorkLock::none};
}

}  // namespace

TEST_CASE("install: the head waits for the destination's lock, a relay does not", "[install]") {
  Node node;
  auto head = node.install({"/tmp/u/env", false, "", "u", WorkLock::wait});
  REQUIRE(head.open().value() == "/tmp/u/env.ezpz-tmp-1");
  auto relay = node.install(relay_target());
  REQUIRE(relay.open().value() == "/tmp/u/env.ezpz-tmp-1");
  CHECK(node.staging.locks == std::vector<WorkLock>{WorkLock::wait, WorkLock::none});
}

TEST_CASE("install: what yeet may not replace is refused before any work, naming the node", "[install]") {
  Node node;
  DestinationFacts file;
  file.exists = true;
  file.type = "a regular file";
  node.trees.destinations["/tmp/u/env"] = file;
  auto relay = node.install(relay_target());
  auto opened = relay.open();
  REQUIRE_FALSE(opened);
  CHECK_THAT(opened.error().message, Catch::Contains("/tmp/u/env on n3 is a regular file"));
  CHECK(node.staging.locks.empty());  // no work directory made
  InstallTarget forced = relay_target();
  forced.force = true;
  CHECK(node.install(forced).open());
}

TEST_CASE("install: a node's work directory that cannot be made names the node", "[install]") {
  Node node;
  node.staging.staging_error = failure("cannot create /tmp/u/env.ezpz-tmp-1: No space left on device");
  auto opened = node.install(relay_target()).open();
  REQUIRE_FALSE(opened);
  CHECK(opened.error().message == "cannot create /tmp/u/env.ezpz-tmp-1: No space left on device (on n3)");
  auto here = node.install({"/tmp/u/env", false, "", "u", WorkLock::wait}).open();
  CHECK(here.error().message == "cannot create /tmp/u/env.ezpz-tmp-1: No space left on device");
}

TEST_CASE("install: a whole tree is committed as it is, and nothing discarded", "[install]") {
  Node node;
  node.manifests.bundle = true;  // a head's tree is never taken for a bundle, whatever it holds
  auto install = node.install({"/tmp/u/env", false, "", "u", WorkLock::wait});
  REQUIRE(install.place("/tmp/u/env.ezpz-tmp-1", Received::tree));
  CHECK(node.staging.committed == std::vector<std::string>{"/tmp/u/env.ezpz-tmp-1 -> /tmp/u/env"});
  CHECK(node.manifests.applied.empty());
  CHECK(node.staging.discarded.empty());
}

TEST_CASE("install: a relay's delta bundle is applied to its copy, the result committed, the bundle removed",
          "[install]") {
  Node node;
  node.manifests.bundle = true;
  auto install = node.install(relay_target());
  REQUIRE(install.place("/tmp/u/env.ezpz-tmp-7", Received::stream));
  CHECK(node.manifests.applied ==
        std::vector<std::string>{"/tmp/u/env.ezpz-tmp-7 + /tmp/u/env -> /tmp/u/env.ezpz-tmp-7.apply"});
  CHECK(node.staging.committed == std::vector<std::string>{"/tmp/u/env.ezpz-tmp-7.apply -> /tmp/u/env"});
  CHECK(node.staging.discarded == std::vector<std::string>{"/tmp/u/env.ezpz-tmp-7"});
}

TEST_CASE("install: a delta that changes nothing leaves the checked copy in place, no commit, no work left",
          "[install]") {
  Node node;
  node.manifests.bundle = true;
  node.manifests.bundle_unchanged = true;
  auto placed = node.install(relay_target()).place("/tmp/u/env.ezpz-tmp-7", Received::stream);
  REQUIRE(placed);
  CHECK(*placed == StepTimes{{"apply_s", 0.5}});  // the apply's own steps, passed on
  CHECK(node.staging.committed.empty());
  CHECK(node.staging.discarded == std::vector<std::string>{"/tmp/u/env.ezpz-tmp-7", "/tmp/u/env.ezpz-tmp-7.apply"});
}

TEST_CASE("install: a delta that does not fit this copy asks for the whole tree and leaves no work", "[install]") {
  Node node;
  node.manifests.bundle = true;
  node.manifests.apply_error = Error{ExitCode::failure, "it missed the last yeet", ErrorKind::needs_full_copy};
  auto placed = node.install(relay_target()).place("/tmp/u/env.ezpz-tmp-7", Received::stream);
  REQUIRE_FALSE(placed);
  CHECK(placed.error().kind == ErrorKind::needs_full_copy);
  CHECK(node.staging.committed.empty());
  CHECK(node.staging.discarded == std::vector<std::string>{"/tmp/u/env.ezpz-tmp-7", "/tmp/u/env.ezpz-tmp-7.apply"});
}

TEST_CASE("install: a commit that fails removes the work and says why", "[install]") {
  Node node;
  node.staging.commit_error = failure("cannot move the new tree to /tmp/u/env: Permission denied");
  auto placed = node.install(relay_target()).place("/tmp/u/env.ezpz-tmp-7", Received::stream);
  REQUIRE_FALSE(placed);
  CHECK(placed.error().message == "cannot move the new tree to /tmp/u/env: Permission denied");
  CHECK(node.staging.discarded == std::vector<std::string>{"/tmp/u/env.ezpz-tmp-7"});
}
