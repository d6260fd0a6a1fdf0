#include "cli/launch_records.hpp"

#include <exception>
#include <map>

#include "cli/terminal.hpp"
#include "core/base/log.hpp"
#include "core/base/strings.hpp"
#include "core/job/job_record.hpp"

namespace ezpz::cli {

void RecordPruner::finish() {
  thread_.join();
  for (const auto& w : warnings_) {
    ctx_.term.warn("pruning old job records: " + w);
  }
  if (pruned_ > 0) {
    log::info("pruned " + core::count_of(pruned_, "old job record"));
  }
}

void RecordPruner::prune() noexcept {
  try {
    for (const auto& dir : make_first_) {
      (void)ctx_.probe().make_dirs(dir);  // (each rank's shim makes it as well, should it come first)
    }
    const auto jobs = core::jobs_dir(ctx_.env);
    const auto keep = core::records_to_keep(ctx_.env);
    if (!jobs || keep == 0) {
      return;
    }
    std::map<std::string, std::vector<std::string>> listing;
    for (const auto& job : ctx_.probe().list_dir(*jobs)) {
      listing[job] = ctx_.probe().list_dir(*jobs + "/" + job);
    }
    const auto old = core::records_to_prune(*jobs, listing, keep, 1);
    for (const auto& path : old) {
      ctx_.staging().discard(path);
    }
    // A job none of whose records is left goes too (not one that keeps any: no rmdir each).
    for (const auto& dir : core::emptied_job_folders(*jobs, listing, old, current_job_)) {
      (void)ctx_.probe().remove_empty_dir(dir);
    }
    warnings_ = ctx_.staging().take_warnings();
    pruned_ = old.size() / 2;
  } catch (const std::exception& e) {
    warnings_.emplace_back(e.what());
  }
}

}  // namespace ezpz::cli
