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

}  // namespace ezpz::core
