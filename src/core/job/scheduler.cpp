#include "core/job/scheduler.hpp"

#include "core/base/strings.hpp"

namespace ezpz::core {

std::string_view to_string(Scheduler s) {
  switch (s) {
    case Scheduler::pbs:
      return "pbs";
    case Scheduler::slurm:
      return "slurm";
    case Scheduler::local:
      return "local";
  }
  return "local";
}

std::optional<Scheduler> scheduler_from_string(std::string_view name) {
  auto lower = to_lower(trim(name));
  if (lower == "pbs" || lower == "pbspro" || lower == "openpbs") {
    return Scheduler::pbs;
  }
  if (lower == "slurm") {
    return Scheduler::slurm;
  }
  if (lower == "local" || lower == "none") {
    return Scheduler::local;
  }
  return std::nullopt;
}

Expected<Scheduler> detect_scheduler(const Env& env) {
  if (auto forced = env.get("EZPZ_SCHEDULER")) {
    if (auto s = scheduler_from_string(*forced)) {
      return *s;
    }
    return usage_error("EZPZ_SCHEDULER='" + *forced + "' is not a scheduler ezpz knows: use pbs, slurm or local");
  }
  if (env.has("PBS_JOBID")) {
    return Scheduler::pbs;
  }
  if (env.has("SLURM_JOB_ID") || env.has("SLURM_JOBID")) {
    return Scheduler::slurm;
  }
  return Scheduler::local;
}

std::optional<std::string> pbs_job_id(const Env& env) {
  auto id = env.get("PBS_JOBID");
  if (!id) {
    return std::nullopt;
  }
  return id->substr(0, id->find('.'));
}

std::optional<std::string> slurm_job_id(const Env& env) {
  if (auto id = env.first_of({"SLURM_JOB_ID", "SLURM_JOBID"})) {
    return id->second;
  }
  return std::nullopt;
}

}  // namespace ezpz::core
