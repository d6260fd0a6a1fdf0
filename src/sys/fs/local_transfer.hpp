// Trees, staging, archives and manifests on this machine (fs/tree.cpp, fs/archive*.cpp,
// fs/incremental.cpp and env patching); work stops at the StopSignals flag and is discarded.
#pragma once

#include <atomic>
#include <csignal>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "core/yeet/transfer.hpp"
#include "sys/fs/clone.hpp"
#include "sys/fs/dst_lock.hpp"
#include "sys/fs/remove.hpp"
#include "sys/os/stop_signals.hpp"

namespace ezpz::sys {

class PosixLocalTransfer final : public core::Trees,
                                 public core::Staging,
                                 public core::Archives,
                                 public core::Manifests {
 public:
  explicit PosixLocalTransfer(StopSignals& stop);
  PosixLocalTransfer(const PosixLocalTransfer&) = delete;
  PosixLocalTransfer& operator=(const PosixLocalTransfer&) = delete;

  [[nodiscard]] core::SourceFacts inspect(const std::string& path) override;
  [[nodiscard]] core::DestinationFacts inspect_destination(const std::string& path) override;
  [[nodiscard]] Expected<core::ChangeEstimate> estimate_sync(const std::string& src, const std::string& dst,
                                                             const std::vector<std::string>& excludes) override;
  [[nodiscard]] Expected<core::TreeStats> measure(const std::string& path,
                                                  const std::vector<std::string>& excludes) override;
  [[nodiscard]] Expected<std::string> make_staging(const std::string& destination, core::WorkLock lock) override;
  [[nodiscard]] Expected<std::string> make_private_dir(const std::string& prefix) override;
  [[nodiscard]] Expected<core::TreeStats> copy_tree(const std::string& src, const std::string& staging,
                                                    const std::vector<std::string>& excludes,
                                                    const core::ProgressFn& progress) override;
  [[nodiscard]] Expected<core::TreeStats> sync_tree(const std::string& src, const std::string& previous,
                                                    const std::string& staging,
                                                    const std::vector<std::string>& excludes,
                                                    const core::ProgressFn& progress) override;
  [[nodiscard]] Expected<core::TreeStats> pack(const std::string& src, const std::string& top_name,
                                               const std::string& out, core::ArchiveFormat format,
                                               const std::vector<std::string>& excludes, core::PackDigest digest,
                                               const core::ProgressFn& progress) override;
  [[nodiscard]] Expected<void> write_checksum(const std::string& archive, const std::string& sha256) override;
  [[nodiscard]] Expected<core::TreeStats> extract(const std::string& archive, const std::string& staging,
                                                  unsigned long long max_bytes, core::ArchiveOrigin origin,
                                                  const core::ProgressFn& progress) override;
  [[nodiscard]] Expected<core::PatchReport> patch_env(const std::string& root, core::EnvKind kind,
                                                      const std::vector<std::string>& old_prefixes,
                                                      const std::string& new_prefix) override;
  [[nodiscard]] std::optional<std::string> recorded_prefix(const std::string& root) override;
  [[nodiscard]] Expected<void> commit(const std::string& staging, const std::string& destination,
                                      core::Previous previous) override;
  void remove_old_trees_later() override { later_ = true; }
  void discard(const std::string& path) override;
  [[nodiscard]] std::vector<std::string> take_warnings() override;
  void watch(const std::string& destination, const std::string& work) override;
  [[nodiscard]] Expected<void> rename_file(const std::string& from, const std::string& to) override;
  [[nodiscard]] int interrupted() const override;
  int watcher_main(const std::vector<std::string>& args) override;
  [[nodiscard]] Expected<core::HeldManifest> held_manifest(const std::string& root) override;
  [[nodiscard]] Expected<void> write_marker(const std::string& root, const std::string& text) override;
  [[nodiscard]] Expected<core::HeldManifest> write_manifest(const std::string& root, const core::Manifest* reuse,
                                                            const std::string& source_root,
                                                            const std::vector<std::string>& ignore) override;
  [[nodiscard]] Expected<core::BundleStats> make_bundle(const std::string& old_root, const core::HeldManifest& old,
                                                        const std::string& new_root, const core::HeldManifest& now,
                                                        const std::string& bundle) override;
  [[nodiscard]] bool is_bundle(const std::string& dir) override;
  void prepare_apply(const std::string& dst, const std::string& out, const std::string& base_digest) override;
  [[nodiscard]] Expected<core::BundleApplied> apply_bundle(const std::string& bundle_dir, const std::string& dst,
                                                           const std::string& out) override;
  [[nodiscard]] Expected<core::ChangeEstimate> estimate_changes(const std::string& source,
                                                                const std::vector<std::string>& excludes,
                                                                const core::Manifest& m) override;
  [[nodiscard]] Expected<core::TreeStats> sync_changes(const std::string& source, const std::string& dst,
                                                       const core::HeldManifest& base,
                                                       const core::ChangeEstimate& changes, const std::string& out,
                                                       const core::ProgressFn& progress) override;
  [[nodiscard]] Expected<core::HeldManifest> update_manifest(const std::string& root, const core::HeldManifest& base,
                                                             const std::string& source_root,
                                                             const std::vector<std::string>& touched,
                                                             const std::vector<std::string>& gone) override;

 private:
  /// Turn SIGINT/SIGTERM/SIGHUP into the stop flag (from the first real work on).
  void arm();
  StopSignals& stop_;
  DestinationLock lock_;               // one yeet at a time to a destination here, until this process ends
  std::vector<std::string> warnings_;  ///< removals that failed, until taken
  /// prepare_apply's clone, made by a thread of its own until apply_bundle (or discard) waits
  /// for it; the future's end joins that thread.
  struct Prepared {
    std::string out;
    std::future<Expected<ClonedCopy>> clone;
  };
  std::optional<Prepared> prepared_;
  bool later_ = false;               ///< remove_old_trees_later
  std::future<Leftovers> removing_;  ///< commit's previous tree being removed, when later_
  /// The prepared clone's end, waited for (before anything is removed or applied).
  void await_prepared();
  /// The background removal's end, waited for; what it left is a warning.
  void await_removal();
};

}  // namespace ezpz::sys
