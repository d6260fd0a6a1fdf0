#include "core/launch/launch_dirs.hpp"

namespace ezpz::core {

LogDirs plan_log_dirs(const std::optional<std::string>& log_dir, const std::string& working_dir,
                      const std::string& stamp, long pid) {
  LogDirs dirs;
  if (!log_dir || log_dir->empty()) {
    return dirs;
  }
  dirs.base = log_dir->front() == '/' ? *log_dir : working_dir + "/" + *log_dir;
  dirs.name = "launch-" + stamp + "-" + std::to_string(pid);
  dirs.run = dirs.base + "/" + dirs.name;
  return dirs;
}

RecordSteps plan_record_steps(const LaunchPlan& plan, const RecordAsk& ask) {
  RecordSteps steps;
  const auto& dir = plan.rank.record_dir;
  if (!ask.record || dir.empty()) {
    return steps;
  }
  steps.prune = true;
  steps.job_folder = dir.substr(0, dir.rfind('/'));
  if (plan.rank_env && plan.style != LauncherStyle::local && !ask.failover) {
    steps.make_first = launch_dirs(plan);
  }
  return steps;
}

std::vector<std::string> launch_dirs(const LaunchPlan& plan) {
  std::vector<std::string> dirs;
  for (const auto* dir : {&plan.rank.record_dir, &plan.rank.log_dir}) {
    if (!dir->empty() && (dirs.empty() || dirs.front() != *dir)) {
      dirs.push_back(*dir);
    }
  }
  return dirs;
}

std::vector<std::string> record_dirs_to_tidy(const LaunchPlan& plan, int attempts) {
  std::vector<std::string> dirs;
  if (plan.rank.record_dir.empty()) {
    return dirs;
  }
  for (int k = attempts - 1; k > 0; --k) {
    dirs.push_back(plan_for_attempt(plan, k).rank.record_dir);
  }
  dirs.push_back(plan.rank.record_dir);
  return dirs;
}

}  // namespace ezpz::core
