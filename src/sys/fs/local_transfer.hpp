// LocalTransfer on this machine: sys/tree.cpp, sys/archive.cpp and env patching, with
// SIGINT/SIGTERM/SIGHUP turned into a stop flag so work ends cleanly and can be discarded.
#pragma once

#include <atomic>
#include <csignal>
#include <vector>

#include "core/transfer.hpp"

namespace ezpz::sys {

class PosixLocalTransfer final : public core::LocalTransfer {
 public:
  PosixLocalTransfer();
  ~PosixLocalTransfer() override;
  PosixLocalTransfer(const PosixLocalTransfer&) = delete;
  PosixLocalTransfer& operator=(const PosixLocalTransfer&) = delete;

  [[nodiscard]] core::SourceFacts inspect(const std::string& path) override;
  [[nodiscard]] Expected<core::TreeStats> measure(const std::string& path,
                                                  const std::vector<std::string>& excludes) override;
  [[nodiscard]] Expected<std::string> make_staging(const std::string& destination) override;
  [[nodiscard]] Expected<core::TreeStats> copy_tree(const std::string& src, const std::string& staging,
                                                    const std::vector<std::string>& excludes,
                                                    const core::ProgressFn& progress) override;
  [[nodiscard]] Expected<core::TreeStats> sync_tree(const std::string& src, const std::string& previous,
                                                    const std::string& staging,
                                                    const std::vector<std::string>& excludes,
                                                    const core::ProgressFn& progress) override;
  [[nodiscard]] Expected<core::TreeStats> pack(const std::string& src, const std::string& top_name,
                                               const std::string& out, core::ArchiveFormat format,
                                               const std::vector<std::string>& excludes, bool digest,
                                               const core::ProgressFn& progress) override;
  [[nodiscard]] Expected<void> write_checksum(const std::string& archive, const std::string& sha256) override;
  [[nodiscard]] Expected<core::TreeStats> extract(const std::string& archive, const std::string& staging,
                                                  unsigned long long max_bytes, bool own,
                                                  const core::ProgressFn& progress) override;
  [[nodiscard]] Expected<core::PatchReport> patch_env(const std::string& root, core::EnvKind kind,
                                                      const std::vector<std::string>& old_prefixes,
                                                      const std::string& new_prefix) override;
  [[nodiscard]] std::optional<std::string> recorded_prefix(const std::string& root) override;
  [[nodiscard]] Expected<void> commit(const std::string& staging, const std::string& destination) override;
  void discard(const std::string& path) override;
  [[nodiscard]] std::vector<std::string> take_warnings() override;
  void watch(const std::string& destination, const std::string& work) override;
  [[nodiscard]] Expected<void> rename_file(const std::string& from, const std::string& to) override;
  [[nodiscard]] int interrupted() const override;
  [[nodiscard]] std::vector<core::NodeResult> broadcast(const std::string& root, const std::string& name,
                                                        const std::vector<core::RelayNode>& tree,
                                                        const core::BroadcastSpec& spec,
                                                        const core::ProgressFn& progress,
                                                        const core::ResultFn& on_result,
                                                        core::StreamStats* stats) override;
  [[nodiscard]] std::vector<core::NodeResult> send_from_peer(const std::string& peer,
                                                             const std::vector<core::RelayNode>& tree,
                                                             const core::BroadcastSpec& spec,
                                                             const core::ResultFn& on_result) override;
  [[nodiscard]] std::vector<core::NodeResult> greedy_broadcast(const core::HostList& targets,
                                                               const core::BroadcastSpec& spec,
                                                               int per_source) override;
  [[nodiscard]] std::pair<std::string, unsigned long long> self_digest() override;
  [[nodiscard]] Expected<core::HeldManifest> held_manifest(const std::string& root) override;
  [[nodiscard]] Expected<core::HeldManifest> write_manifest(const std::string& root, const core::Manifest* reuse,
                                                            const std::string& source_root,
                                                            const std::vector<std::string>& ignore) override;
  [[nodiscard]] Expected<core::BundleStats> make_bundle(const std::string& old_root, const core::HeldManifest& old,
                                                        const std::string& new_root, const core::HeldManifest& now,
                                                        const std::string& bundle) override;
  [[nodiscard]] Expected<core::ChangeEstimate> estimate_changes(const std::string& source,
                                                                const std::vector<std::string>& excludes,
                                                                const core::Manifest& m) override;
  int relay(const std::string& this_host, const std::vector<core::RelayNode>& children, const core::BroadcastSpec& spec,
            std::ostream& out) override;
  int serve_copy(const std::string& root, const std::vector<core::RelayNode>& tree, const core::BroadcastSpec& spec,
                 std::ostream& out) override;

 private:
  /// Turn SIGINT/SIGTERM/SIGHUP into the stop flag (from the first real work on).
  void arm();
  std::vector<struct sigaction> saved_;
  std::vector<std::string> warnings_;  ///< removals that failed, until taken
};

}  // namespace ezpz::sys
