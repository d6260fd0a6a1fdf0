// Fakes of yeet's and tar-env's ports, a few lines each: trees and staging that succeed and
// record, manifests that say what a test sets, and a broadcaster that answers with scripted
// results and records each pass (so repair, thresholds and outcomes are tested without nodes).
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/base/strings.hpp"
#include "core/yeet/transfer.hpp"

namespace ezpz::test {

class FakeTrees final : public core::Trees {
 public:
  std::map<std::string, core::DestinationFacts> destinations;  ///< what is at a path (else nothing)
  core::SourceFacts inspect(const std::string& path) override { return {true, true, false, false, path}; }
  core::DestinationFacts inspect_destination(const std::string& path) override {
    core::DestinationFacts f;
    if (const auto it = destinations.find(path); it != destinations.end()) {
      f = it->second;
    }
    return f;
  }
  Expected<core::TreeStats> measure(const std::string&, const std::vector<std::string>&) override {
    core::TreeStats s;
    s.files = 3;
    s.bytes = 300;
    return s;
  }
  Expected<core::TreeStats> copy_tree(const std::string&, const std::string&, const std::vector<std::string>&,
                                      const core::ProgressFn&) override {
    return copied();
  }
  Expected<core::TreeStats> sync_tree(const std::string&, const std::string&, const std::string&,
                                      const std::vector<std::string>&, const core::ProgressFn&) override {
    return copied();
  }
  Expected<core::PatchReport> patch_env(const std::string&, core::EnvKind, const std::vector<std::string>&,
                                        const std::string&) override {
    return core::PatchReport{};
  }
  std::optional<std::string> recorded_prefix(const std::string&) override { return std::nullopt; }

 private:
  static core::TreeStats copied() {
    core::TreeStats s;
    s.copied_files = 3;
    return s;
  }
};

class FakeStaging final : public core::Staging {
 public:
  std::vector<std::string> committed, discarded, renamed;
  int signal = 0;                      ///< what interrupted() answers once `signal_after_pass` (or at once)
  std::vector<core::WorkLock> locks;   ///< what each make_staging was asked
  std::optional<Error> staging_error;  ///< make_staging fails with it
  Expected<std::string> make_staging(const std::string& dst, core::WorkLock lock) override {
    locks.push_back(lock);
    if (staging_error) {
      return *staging_error;
    }
    return dst + ".ezpz-tmp-1";
  }
  Expected<std::string> make_private_dir(const std::string& prefix) override { return prefix + ".000001"; }
  std::optional<Error> commit_error;  ///< commit fails with it
  std::vector<core::Previous> kept;   ///< what each commit did with the tree it replaced
  Expected<void> commit(const std::string& staging, const std::string& dst, core::Previous previous) override {
    if (commit_error) {
      return *commit_error;
    }
    committed.push_back(staging + " -> " + dst);
    kept.push_back(previous);
    return {};
  }
  void discard(const std::string& path) override { discarded.push_back(path); }
  void watch(const std::string&, const std::string&) override {}
  int watcher_main(const std::vector<std::string>&) override { return 0; }
  Expected<void> rename_file(const std::string& from, const std::string& to) override {
    renamed.push_back(from + " -> " + to);
    return {};
  }
  int interrupted() const override { return signal; }
};

class FakeArchives final : public core::Archives {
 public:
  bool pack_fails = false;
  std::vector<std::string> checksums;  ///< archive names whose .sha256 was written
  Expected<core::TreeStats> pack(const std::string&, const std::string&, const std::string&, core::ArchiveFormat,
                                 const std::vector<std::string>&, core::PackDigest, const core::ProgressFn&) override {
    if (pack_fails) {
      return failure("no space left on device");
    }
    core::TreeStats s;
    s.sha256 = std::string(64, 'a');
    return s;
  }
  Expected<void> write_checksum(const std::string& archive, const std::string&) override {
    checksums.push_back(archive);
    return {};
  }
  /// Like the real one: an archive whose .sha256 was written is checked against it.
  Expected<core::TreeStats> extract(const std::string& archive, const std::string&, unsigned long long,
                                    core::ArchiveOrigin, const core::ProgressFn&) override {
    core::TreeStats s;
    s.checks = core::ArchiveChecks{};
    s.checks->sha256 = std::find(checksums.begin(), checksums.end(), archive) != checksums.end();
    return s;
  }
};

class FakeManifests final : public core::Manifests {
 public:
  static core::HeldManifest held_with(const std::string& digest) {
    core::HeldManifest h;
    h.digest = digest;
    return h;
  }
  bool held = false;  ///< this node holds its last copy, untouched: other nodes get a delta
  Expected<core::HeldManifest> held_manifest(const std::string&) override {
    if (!held) {
      return failure("no manifest from an earlier yeet");
    }
    return held_with("old-digest");
  }
  Expected<void> write_marker(const std::string&, const std::string&) override { return {}; }
  Expected<core::HeldManifest> write_manifest(const std::string&, const core::Manifest*, const std::string&,
                                              const std::vector<std::string>&) override {
    return held_with("new-digest");
  }
  Expected<core::BundleStats> make_bundle(const std::string&, const core::HeldManifest&, const std::string&,
                                          const core::HeldManifest&, const std::string&) override {
    return core::BundleStats{1, 10, 1, 5, 0};
  }
  Expected<core::ChangeEstimate> estimate_changes(const std::string&, const std::vector<std::string>&,
                                                  const core::Manifest&) override {
    return core::ChangeEstimate{2, 20, 1};
  }
  std::vector<std::string> synced;  ///< "SOURCE + DST -> OUT" for each sync_changes
  Expected<core::TreeStats> sync_changes(const std::string& source, const std::string& dst, const core::HeldManifest&,
                                         const core::ChangeEstimate& changes, const std::string& out,
                                         const core::ProgressFn&) override {
    synced.push_back(source + " + " + dst + " -> " + out);
    core::TreeStats s;
    s.copied_files = changes.files;
    return s;
  }
  Expected<core::HeldManifest> update_manifest(const std::string&, const core::HeldManifest&, const std::string&,
                                               const std::vector<std::string>&,
                                               const std::vector<std::string>&) override {
    return held_with("new-digest");
  }
  bool bundle = false;               ///< what is_bundle answers
  std::optional<Error> apply_error;  ///< apply_bundle fails with it
  std::vector<std::string> applied;  ///< "BUNDLE + DST -> OUT" for each apply_bundle
  bool is_bundle(const std::string&) override { return bundle; }
  bool bundle_unchanged = false;  ///< apply_bundle says the copy already is the new one
  Expected<core::BundleApplied> apply_bundle(const std::string& bundle_dir, const std::string& dst,
                                             const std::string& out) override {
    applied.push_back(bundle_dir + " + " + dst + " -> " + out);
    if (apply_error) {
      return *apply_error;
    }
    return core::BundleApplied{{{"apply_s", 0.5}}, bundle_unchanged};
  }
};

/// Answers the first pass with `first` (by host; hosts not listed succeed) and every repair with
/// success for each host of its tree; records what each call was asked.
class FakeBroadcaster final : public core::Broadcaster {
 public:
  std::map<std::string, core::NodeResult> first;
  struct Call {
    std::string kind;  ///< "broadcast", "peer", "greedy"
    std::string from;  ///< the root streamed, or the peer
    std::string tree;  ///< encoded
  };
  std::vector<Call> calls;
  FakeStaging* stop_after_pass = nullptr;          ///< set its signal (SIGTERM) once the first pass is done
  std::map<std::string, std::string> unreachable;  ///< what open_nodes says
  int opened = 0;
  int closed = 0;
  [[nodiscard]] std::map<std::string, std::string> open_nodes(const core::HostList& /*hosts*/,
                                                              const core::BroadcastSpec& /*spec*/) override {
    ++opened;
    return unreachable;
  }
  void close_nodes() override { ++closed; }

  std::vector<core::NodeResult> broadcast(const std::string& root, const std::string&,
                                          const std::vector<core::RelayNode>& tree, const core::BroadcastSpec&,
                                          const core::ProgressFn&, const core::ResultFn& on_result,
                                          core::StreamStats*) override {
    calls.push_back({"broadcast", root, core::encode_tree(tree)});
    return answer(tree, calls.size() == 1, on_result);
  }
  std::vector<core::NodeResult> send_from_peer(const std::string& peer, const std::vector<core::RelayNode>& tree,
                                               const core::BroadcastSpec&, const core::ResultFn& on_result) override {
    calls.push_back({"peer", peer, core::encode_tree(tree)});
    return answer(tree, false, on_result);
  }
  std::vector<core::NodeResult> greedy_broadcast(const core::HostList& targets, const core::BroadcastSpec&,
                                                 int) override {
    calls.push_back({"greedy", "", core::join(targets, ",")});
    return answer(core::relay_tree(targets, 64), true, {});
  }
  int relay(const std::string&, const std::vector<core::RelayNode>&, const core::BroadcastSpec&, core::NodeInstall&,
            std::ostream&) override {
    return 1;
  }
  int serve_copy(const std::string&, const std::vector<core::RelayNode>&, const core::BroadcastSpec&,
                 std::ostream&) override {
    return 1;
  }

 private:
  std::vector<core::NodeResult> answer(const std::vector<core::RelayNode>& tree, bool first_pass,
                                       const core::ResultFn& on_result) {
    std::vector<core::NodeResult> out;
    for (const auto& top : tree) {
      for (const auto& host : core::subtree_hosts(top)) {
        core::NodeResult r;
        r.host = host;
        r.outcome = core::NodeOutcome::ok;
        if (auto it = first.find(host); first_pass && it != first.end()) {
          r = it->second;
        }
        if (on_result) {
          on_result(r);
        }
        out.push_back(r);
      }
    }
    if (first_pass && stop_after_pass != nullptr) {
      stop_after_pass->signal = 15;
    }
    return out;
  }
};

}  // namespace ezpz::test
