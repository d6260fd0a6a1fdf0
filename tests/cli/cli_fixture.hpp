// Run the CLI on an argv vector without main(): fake system, captured output.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "cli/fake_transfer.hpp"
#include "cli/terminal.hpp"
#include "core/reach/transport.hpp"
#include "fake_probe.hpp"

namespace ezpz::test {

class FakeProcess final : public core::JobControl, public core::ProcessTable, public core::NodeCommands {
 public:
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
  core::ChildExit child_exit{.exit_code = 127, .exec_errno = 2};  ///< what run_child answers
  std::string child_label;
  std::vector<std::string> child_unset;
  core::ChildIo child_io;
  core::ChildExit run_child(const std::vector<std::string>& a,
                            const std::vector<std::pair<std::string, std::string>>& e,
                            const std::vector<std::string>& unset, const core::ChildIo& io) override {
    argv = a;
    env = e;
    child_label = io.label;
    child_unset = unset;
    child_io = io;
    return child_exit;
  }
  int finish_like(const core::ChildExit& exit) override { return exit.exit_code; }
  /// What run() was asked to start, and what it answers.
  std::vector<std::vector<core::ProcessSpec>> runs;
  std::vector<core::RunOptions> run_options;
  std::vector<int> exit_codes = {0};  ///< one per attempt; the last repeats
  Expected<core::RunResult> run(const std::vector<core::ProcessSpec>& processes,
                                const core::RunOptions& options) override {
    runs.push_back(processes);
    run_options.push_back(options);
    core::RunResult r;
    r.exit_code = exit_codes[std::min(runs.size(), exit_codes.size()) - 1];
    return r;
  }
  int reserve_tcp_port() override { return 29500; }
  std::vector<double> sleeps;
  bool sleep_unless_interrupted(double seconds) override {
    sleeps.push_back(seconds);
    return true;
  }
  std::vector<core::ProcessInfo> jobs;       ///< what job_processes() answers
  std::vector<std::pair<int, int>> signals;  ///< (pid, signal) sent
  std::vector<core::ProcessInfo> job_processes() override { return jobs; }
  std::vector<int> self_and_ancestors() override { return {1000}; }
  bool send_signal(int pid, int sig) override {
    signals.emplace_back(pid, sig);
    std::erase_if(jobs, [&](const core::ProcessInfo& p) { return p.pid == pid; });
    return true;
  }
  std::vector<std::pair<int, int>> shim_signals;  ///< (shim pid, signal) sent
  bool signal_shim(int shim, int sig) override {
    shim_signals.emplace_back(shim, sig);
    std::erase_if(jobs, [&](const core::ProcessInfo& p) { return p.shim == shim; });
    return true;
  }
  bool alive(int pid) override {
    return std::any_of(jobs.begin(), jobs.end(), [&](const auto& p) { return p.pid == pid; });
  }
  std::vector<core::NodeOutput> run_on_nodes(const core::HostList&, const std::vector<std::string>&,
                                             const core::ReachSpec&, double) override {
    return {};
  }
};

/// Trees, staging, archives and manifests that fail every operation (the CLI tests of other
/// commands never reach them; yeet and tar-env have their fakes in fake_transfer.hpp).
class NoTransfer final : public core::Trees, public core::Staging, public core::Archives, public core::Manifests {
 public:
  core::SourceFacts inspect(const std::string&) override { return {}; }
  core::DestinationFacts inspect_destination(const std::string&) override { return {}; }
  Expected<core::TreeStats> measure(const std::string&, const std::vector<std::string>&) override { return no(); }
  Expected<std::string> make_staging(const std::string&, core::WorkLock) override { return no(); }
  Expected<std::string> make_private_dir(const std::string&) override { return no(); }
  Expected<core::TreeStats> copy_tree(const std::string&, const std::string&, const std::vector<std::string>&,
                                      const core::ProgressFn&) override {
    return no();
  }
  Expected<core::TreeStats> sync_tree(const std::string&, const std::string&, const std::string&,
                                      const std::vector<std::string>&, const core::ProgressFn&) override {
    return no();
  }
  Expected<core::TreeStats> pack(const std::string&, const std::string&, const std::string&, core::ArchiveFormat,
                                 const std::vector<std::string>&, core::PackDigest, const core::ProgressFn&) override {
    return no();
  }
  Expected<void> write_checksum(const std::string&, const std::string&) override { return no(); }
  Expected<core::TreeStats> extract(const std::string&, const std::string&, unsigned long long, core::ArchiveOrigin,
                                    const core::ProgressFn&) override {
    return no();
  }
  Expected<core::PatchReport> patch_env(const std::string&, core::EnvKind, const std::vector<std::string>&,
                                        const std::string&) override {
    return no();
  }
  std::optional<std::string> recorded_prefix(const std::string&) override { return std::nullopt; }
  Expected<void> commit(const std::string&, const std::string&, core::Previous) override { return no(); }
  void discard(const std::string&) override {}
  void watch(const std::string&, const std::string&) override {}
  Expected<void> rename_file(const std::string&, const std::string&) override { return no(); }
  int interrupted() const override { return 0; }
  int watcher_main(const std::vector<std::string>&) override { return 1; }
  Expected<core::HeldManifest> held_manifest(const std::string&) override { return no(); }
  Expected<void> write_marker(const std::string&, const std::string&) override { return no(); }
  Expected<core::HeldManifest> write_manifest(const std::string&, const core::Manifest*, const std::string&,
                                              const std::vector<std::string>&) override {
    return no();
  }
  Expected<core::BundleStats> make_bundle(const std::string&, const core::HeldManifest&, const std::string&,
                                          const core::HeldManifest&, const std::string&) override {
    return no();
  }
  Expected<core::ChangeEstimate> estimate_changes(const std::string&, const std::vector<std::string>&,
                                                  const core::Manifest&) override {
    return no();
  }
  Expected<core::TreeStats> sync_changes(const std::string&, const std::string&, const core::HeldManifest&,
                                         const core::ChangeEstimate&, const std::string&,
                                         const core::ProgressFn&) override {
    return no();
  }
  Expected<core::HeldManifest> update_manifest(const std::string&, const core::HeldManifest&, const std::string&,
                                               const std::vector<std::string>&,
                                               const std::vector<std::string>&) override {
    return no();
  }
  bool is_bundle(const std::string&) override { return false; }
  Expected<core::BundleApplied> apply_bundle(const std::string&, const std::string&, const std::string&) override {
    return no();
  }

 private:
  static Error no() { return failure("no filesystem in this test"); }
};

struct CliRun {
  int rc = 0;
  std::string out;
  std::string err;
};

/// A rank hub that hears nothing: the launcher's line is what cli tests look at.
class QuietHub final : public core::RankHub {
 public:
  [[nodiscard]] std::string address() const override { return "127.0.0.1:9"; }
  [[nodiscard]] std::string key() const override { return std::string(64, '0'); }
  [[nodiscard]] std::vector<int> fds() const override { return {}; }
  bool service(int) override { return false; }
  void kill_ranks() override {}
  void finish(double, double) override {}
  [[nodiscard]] std::optional<core::RankFailure> take_failure() override { return std::nullopt; }
  [[nodiscard]] std::vector<core::RankWatch> ranks() const override { return {}; }
  [[nodiscard]] std::vector<core::RankExit> exits() const override { return {}; }
};

class FakeRankChannels final : public core::RankChannels {
 public:
  int hubs = 0;  ///< how many were opened
  Expected<std::unique_ptr<core::RankHub>> open_hub(const core::HubOptions&) override {
    ++hubs;
    return std::unique_ptr<core::RankHub>(std::make_unique<QuietHub>());
  }
  std::unique_ptr<core::PendingRankLink> begin_hub(const core::Env&, int, const std::string&,
                                                   std::string& why) override {
    why.clear();
    return nullptr;
  }
};

inline FakeRankChannels& fake_rank_channels() {
  static FakeRankChannels channels;
  return channels;
}

/// The CLI with the ports given (null: not offered), output captured.
inline CliRun run_cli_ports(const std::vector<std::string>& args, const core::Env& env, const cli::Ports& ports) {
  std::ostringstream out;
  std::ostringstream err;
  cli::Terminal term(out, err, cli::Colors::none());
  int rc = cli::run_main(args, env, term, ports);
  return {rc, out.str(), err.str()};
}

inline CliRun run_cli(const std::vector<std::string>& args, const core::Env& env, const FakeProbe& probe,
                      FakeProcess* process = nullptr) {
  std::ostringstream out;
  std::ostringstream err;
  cli::Terminal term(out, err, cli::Colors::none());
  FakeProcess local;
  NoTransfer transfer;
  FakeBroadcaster broadcaster;
  auto& p = process != nullptr ? *process : local;
  const cli::Ports ports{&probe,    &probe,    &p,        &p,           &p,      &transfer,
                         &transfer, &transfer, &transfer, &broadcaster, nullptr, &fake_rank_channels()};
  int rc = cli::run_main(args, env, term, ports);
  return {rc, out.str(), err.str()};
}

}  // namespace ezpz::test
