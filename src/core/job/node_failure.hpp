// Whether a job outlives the failure of one of its nodes, as its scheduler says: failover swaps
// a spare in only then (Slurm ends a job not submitted --no-kill; PBS one without
// tolerate_node_failures). Pure but for node_failure_tolerance, which asks the scheduler's own
// commands through the probe: the scheduler's texts in, what it says out.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/base/env.hpp"
#include "core/ports/probe.hpp"

namespace ezpz::core {

/// Newer Slurm's `scontrol --json show job ID`: its job's kill_on_node_fail (nullopt: not said).
[[nodiscard]] std::optional<bool> slurm_kill_on_node_fail(std::string_view json);
/// `scontrol show job ID`: the batch script (Command=) of a batch job (BatchFlag=1); nullopt else.
[[nodiscard]] std::optional<std::string> slurm_batch_script(std::string_view show_job);
/// Whether a batch script's directives ask for --no-kill (#SBATCH --no-kill, -k).
[[nodiscard]] bool script_has_no_kill(std::string_view script);
/// PBS's `qstat -f JOBID`: tolerate_node_failures' value ("all", "job_start", "none"; nullopt: unset).
[[nodiscard]] std::optional<std::string> pbs_tolerate_node_failures(std::string_view qstat_f);

/// What the job's scheduler says of a node's failure, for launch --spare-nodes and doctor.
struct NodeFailureTolerance {
  enum class Kind {
    no_job,     ///< no Slurm or PBS job (or no scontrol / qstat to ask)
    tolerant,   ///< the job outlives a node's failure: a spare can be swapped in
    ends_job,   ///< the scheduler ends the whole job when a node fails
    not_known,  ///< it could not be told
  };
  Kind kind = Kind::no_job;
  std::string message;  ///< one line: what was found ("" for no_job)
  std::string remedy;   ///< the fix, for ends_job and not_known
};

/// Ask the scheduler (SLURM_NO_KILL, `scontrol --json show job`, the batch script's directives;
/// PBS's `qstat -f`), each question within 10 s.
[[nodiscard]] NodeFailureTolerance node_failure_tolerance(const Env& env, const SystemProbe& probe);

}  // namespace ezpz::core
