#include "core/job/node_failure.hpp"

#include <nlohmann/json.hpp>

#include "core/base/strings.hpp"

namespace ezpz::core {

std::optional<bool> slurm_kill_on_node_fail(std::string_view json) {
  const auto j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object() || !j.contains("jobs") || !j["jobs"].is_array() || j["jobs"].empty()) {
    return std::nullopt;
  }
  const auto& job = j["jobs"][0];
  if (auto it = job.find("kill_on_node_fail"); it != job.end() && it->is_boolean()) {
    return it->get<bool>();
  }
  return std::nullopt;
}

std::optional<std::string> slurm_batch_script(std::string_view show_job) {
  bool batch = false;
  std::optional<std::string> command;
  for (auto line : split(show_job, '\n')) {
    for (auto word : split(trim(line), ' ')) {
      batch = batch || word == "BatchFlag=1";
      if (starts_with(word, "Command=") && word.size() > 8) {
        command = std::string(word.substr(8));
      }
    }
  }
  return batch ? command : std::nullopt;
}

bool script_has_no_kill(std::string_view script) {
  for (auto line : split(script, '\n')) {
    const auto l = trim(line);
    if (!starts_with(l, "#SBATCH")) {
      continue;
    }
    for (auto word : split(l.substr(7), ' ')) {
      if (word == "-k" || word == "--no-kill" || starts_with(word, "--no-kill=")) {
        return true;
      }
    }
  }
  return false;
}

std::optional<std::string> pbs_tolerate_node_failures(std::string_view qstat_f) {
  for (auto line : split(qstat_f, '\n')) {
    const auto l = trim(line);
    if (starts_with(l, "tolerate_node_failures")) {
      const auto eq = l.find('=');
      if (eq != std::string_view::npos) {
        return std::string(trim(l.substr(eq + 1)));
      }
    }
  }
  return std::nullopt;
}

namespace {

using Tolerance = NodeFailureTolerance;

/// Whether Slurm ends job `id` when a node fails: its --json's kill_on_node_fail, else (an older
/// Slurm) the batch script's directives; nullopt when neither says.
std::optional<bool> slurm_kills_on_node_fail(const std::string& id, const SystemProbe& probe) {
  if (auto json = probe.run_program({"scontrol", "--json", "show", "job", id}, {}, {}, 10);
      json && json->exit_code == 0) {
    if (auto said = slurm_kill_on_node_fail(json->output)) {
      return said;
    }
  }
  auto shown = probe.run_program({"scontrol", "show", "job", id}, {}, {}, 10);
  const auto script = shown && shown->exit_code == 0 ? slurm_batch_script(shown->output) : std::nullopt;
  if (!script) {
    return std::nullopt;
  }
  auto text = probe.read_file(*script);
  return text ? std::optional<bool>(!script_has_no_kill(*text)) : std::nullopt;
}

Tolerance slurm_tolerance(const std::string& id, const SystemProbe& probe) {
  const std::string fix = "ezpz submit --spare-nodes N writes it";
  const auto kills = slurm_kills_on_node_fail(id, probe);
  if (!kills.has_value()) {
    return {Tolerance::Kind::not_known,
            "cannot tell whether this allocation was made with --no-kill (salloc -k): without it Slurm ends the "
            "whole job when a node fails, and no spare can take its place",
            "allocate with --no-kill (salloc -k; " + fix + ")"};
  }
  if (kills.value()) {
    return {Tolerance::Kind::ends_job,
            "this Slurm job was submitted without --no-kill: Slurm ends the whole job when a node fails, so no "
            "spare can take its place",
            "submit with #SBATCH --no-kill (salloc -k; " + fix + ")"};
  }
  return {Tolerance::Kind::tolerant, "this Slurm job outlives a node's failure (--no-kill): a spare can take its place",
          ""};
}

Tolerance pbs_tolerance(const std::string& id, const SystemProbe& probe) {
  auto out = probe.run_program({"qstat", "-f", id}, {}, {}, 10);
  if (!out || out->exit_code != 0) {
    return {Tolerance::Kind::not_known,
            "qstat -f " + id + " did not answer: cannot tell whether this PBS job tolerates node failures",
            "qsub -W tolerate_node_failures=all, where the site allows it"};
  }
  const auto tolerate = pbs_tolerate_node_failures(out->output);
  if (tolerate == "all" || tolerate == "job_start") {
    return {
        Tolerance::Kind::tolerant,
        "this PBS job tolerates node failures (tolerate_node_failures=" + *tolerate + "): a spare can take its place",
        ""};
  }
  return {Tolerance::Kind::ends_job,
          "this PBS job does not tolerate node failures (tolerate_node_failures=" + tolerate.value_or("unset") +
              "): the server may end it when a node fails",
          "where the site allows it, qsub -W tolerate_node_failures=all"};
}

}  // namespace

NodeFailureTolerance node_failure_tolerance(const Env& env, const SystemProbe& probe) {
  if (const auto id = env.get("SLURM_JOB_ID"); id && probe.find_program("scontrol")) {
    if (!env.get("SLURM_NO_KILL").value_or("").empty()) {
      return {Tolerance::Kind::tolerant, "this Slurm job outlives a node's failure (SLURM_NO_KILL: --no-kill)", ""};
    }
    return slurm_tolerance(*id, probe);
  }
  if (const auto id = env.get("PBS_JOBID"); id && probe.find_program("qstat")) {
    return pbs_tolerance(*id, probe);
  }
  return {};
}

}  // namespace ezpz::core
