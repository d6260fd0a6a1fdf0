// Which scheduler owns this process, and its job id.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/base/env.hpp"
#include "core/base/expected.hpp"

namespace ezpz::core {

enum class Scheduler { pbs, slurm, local };

[[nodiscard]] std::string_view to_string(Scheduler s);
[[nodiscard]] std::optional<Scheduler> scheduler_from_string(std::string_view name);

/// EZPZ_SCHEDULER override; PBS_JOBID -> PBS; SLURM_JOB_ID/SLURM_JOBID -> Slurm; else local.
/// An EZPZ_SCHEDULER value we do not know is a usage error.
[[nodiscard]] Expected<Scheduler> detect_scheduler(const Env& env);

/// PBS_JOBID up to its first '.', e.g. "12345.aurora-pbs-0001..." -> "12345".
[[nodiscard]] std::optional<std::string> pbs_job_id(const Env& env);
[[nodiscard]] std::optional<std::string> slurm_job_id(const Env& env);

}  // namespace ezpz::core
