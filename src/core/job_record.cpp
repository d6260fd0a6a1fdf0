#include "core/job_record.hpp"

namespace ezpz::core {

std::optional<std::string> record_path(const Env& env, Scheduler scheduler, std::string_view timestamp) {
  std::string home;
  if (auto h = env.get("EZPZ_HOME")) {
    home = *h;
  } else if (auto user_home = env.get("HOME")) {
    home = *user_home + "/.ezpz";
  } else {
    return std::nullopt;
  }
  std::optional<std::string> job;
  if (scheduler == Scheduler::pbs) {
    job = pbs_job_id(env);
  } else if (scheduler == Scheduler::slurm) {
    job = slurm_job_id(env);
  }
  const std::string ts(timestamp);
  return home + "/jobs/" + job.value_or("local-" + ts) + "/launch-" + ts + "-" + std::to_string(env.pid) + ".json";
}

}  // namespace ezpz::core
