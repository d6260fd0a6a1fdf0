#include "core/job_record.hpp"

namespace ezpz::core {

std::string job_run_id(const Env& env, Scheduler scheduler, std::string_view timestamp) {
  std::optional<std::string> job;
  if (scheduler == Scheduler::pbs) {
    job = pbs_job_id(env);
  } else if (scheduler == Scheduler::slurm) {
    job = slurm_job_id(env);
  }
  return job.value_or("local-" + std::string(timestamp));
}

std::optional<std::string> record_dir(const Env& env, Scheduler scheduler, std::string_view timestamp) {
  std::string home;
  if (auto h = env.get("EZPZ_HOME")) {
    home = *h;
  } else if (auto user_home = env.get("HOME")) {
    home = *user_home + "/.ezpz";
  } else {
    return std::nullopt;
  }
  const std::string ts(timestamp);
  return home + "/jobs/" + job_run_id(env, scheduler, ts) + "/launch-" + ts + "-" + std::to_string(env.pid);
}

std::optional<std::string> record_path(const Env& env, Scheduler scheduler, std::string_view timestamp) {
  auto dir = record_dir(env, scheduler, timestamp);
  return dir ? std::optional<std::string>(*dir + ".json") : std::nullopt;
}

}  // namespace ezpz::core
