// Whether a job outlives the failure of one of its nodes, as its scheduler says: failover swaps
// a spare in only then (Slurm ends a job not submitted --no-kill; PBS one without
// tolerate_node_failures). Pure: the scheduler's texts in, what it says out.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ezpz::core {

/// Newer Slurm's `scontrol --json show job ID`: its job's kill_on_node_fail (nullopt: not said).
[[nodiscard]] std::optional<bool> slurm_kill_on_node_fail(std::string_view json);
/// `scontrol show job ID`: the batch script (Command=) of a batch job (BatchFlag=1); nullopt else.
[[nodiscard]] std::optional<std::string> slurm_batch_script(std::string_view show_job);
/// Whether a batch script's directives ask for --no-kill (#SBATCH --no-kill, -k).
[[nodiscard]] bool script_has_no_kill(std::string_view script);
/// PBS's `qstat -f JOBID`: tolerate_node_failures' value ("all", "job_start", "none"; nullopt: unset).
[[nodiscard]] std::optional<std::string> pbs_tolerate_node_failures(std::string_view qstat_f);

}  // namespace ezpz::core
