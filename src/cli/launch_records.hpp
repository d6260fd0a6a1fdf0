// The launch's own directories and its old records: made and pruned off the job's start.
#pragma once

#include <cstddef>
#include <string>
#include <thread>
#include <vector>

#include "cli/command.hpp"

namespace ezpz::cli {

/// Keep the newest records only (EZPZ_KEEP_RECORDS, default 100): home quotas and inode limits.
/// The old ones go on a thread of their own while the job runs: on a shared home directory each
/// look at a record is a metadata round trip, and none of them should hold up the job's start or
/// its end. This launch's record, written after finish(), counts among the N; its job folder
/// (`current_job`, being filled meanwhile) is never removed.
class RecordPruner {
 public:
  /// `make_first`: directories the launch needs by the time its ranks run, made on the thread first.
  RecordPruner(Context& ctx, std::string current_job, std::vector<std::string> make_first)
      : ctx_(ctx),
        current_job_(std::move(current_job)),
        make_first_(std::move(make_first)),
        thread_([this] { prune(); }) {}
  RecordPruner(const RecordPruner&) = delete;
  RecordPruner& operator=(const RecordPruner&) = delete;
  ~RecordPruner() {
    if (thread_.joinable()) {
      thread_.join();  // a launch that ended by an exception: the thread is still ours
    }
  }

  /// Waits for it, then says what it could not remove.
  void finish();

 private:
  void prune() noexcept;

  Context& ctx_;
  std::string current_job_;
  std::vector<std::string> make_first_;
  std::vector<std::string> warnings_;
  std::size_t pruned_ = 0;
  std::thread thread_;  ///< last: it starts once the rest is set
};

}  // namespace ezpz::cli
