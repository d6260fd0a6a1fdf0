#include "core/job/allocation.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "core/base/strings.hpp"

namespace ezpz::core {
namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

bool device_entry(std::string_view e) {
  return all_digits(e) || starts_with(e, "GPU-") || starts_with(e, "MIG-");
}

}  // namespace

int count_visible_devices(std::string_view list) {
  int n = 0;
  for (auto entry : split(list, ',')) {
    if (!device_entry(trim(entry))) {
      break;
    }
    ++n;
  }
  return n;
}

int count_ze_mask(std::string_view mask, bool composite) {
  std::set<std::string_view> devices;
  for (auto raw : split(mask, ',')) {
    auto entry = trim(raw);
    auto dot = entry.find('.');
    auto card = entry.substr(0, dot);
    if (!all_digits(card) || (dot != std::string_view::npos && !all_digits(entry.substr(dot + 1)))) {
      break;
    }
    devices.insert(composite ? card : entry);
  }
  return static_cast<int>(devices.size());
}

std::optional<int> parse_slurm_gpus(std::string_view value) {
  int total = 0;
  for (auto raw : split(value, ',')) {
    auto entry = trim(raw);
    entry = entry.substr(0, entry.find('('));  // "gpu:4(IDX:0-3)"
    auto colon = entry.rfind(':');
    auto n = parse_positive_int(colon == std::string_view::npos ? entry : entry.substr(colon + 1));
    if (!n) {
      return std::nullopt;
    }
    total += *n;
  }
  return total > 0 ? std::optional(total) : std::nullopt;
}

std::optional<int> slurm_per_node_min(std::string_view value) {
  std::optional<int> least;
  for (auto raw : split(value, ',')) {
    auto entry = trim(raw);
    entry = entry.substr(0, entry.find('('));  // "64(x2)"
    auto n = parse_positive_int(entry);
    if (!n) {
      return std::nullopt;
    }
    least = least ? std::min(*least, *n) : *n;
  }
  return least;
}

int tiles_per_gpu(std::string_view machine) {
  // Intel Data Center GPU Max 1550: two tiles (stacks) per card; the profiles count tiles.
  return machine == "aurora" || machine == "sunspot" ? 2 : 1;
}

std::optional<int> SlurmTasks::cpu_limit() const {
  if (overcommit || !cpus_per_node) {
    return std::nullopt;
  }
  return std::max(1, *cpus_per_node / std::max(1, cpus_per_task));
}

SlurmTasks slurm_tasks(const Env& env) {
  SlurmTasks t;
  if (auto v = env.get("SLURM_NTASKS_PER_NODE")) {
    t.ntasks_per_node = parse_positive_int(trim(*v));
  }
  if (auto v = env.get("SLURM_JOB_CPUS_PER_NODE")) {
    t.cpus_per_node = slurm_per_node_min(*v);
    t.cpus_text = *v;
  }
  if (auto v = env.get("SLURM_CPUS_PER_TASK")) {
    t.cpus_per_task = parse_positive_int(trim(*v)).value_or(1);
    t.cpus_per_task_set = parse_positive_int(trim(*v)).has_value();
  }
  if (auto v = env.get("SLURM_OVERCOMMIT")) {
    t.overcommit = *v != "0";
  }
  return t;
}

std::optional<CpusPerTask> srun_cpus_per_task(const SlurmTasks& tasks, int profile_cpus_per_node, int ppn) {
  if (tasks.cpus_per_task_set) {
    return CpusPerTask{tasks.cpus_per_task, "SLURM_CPUS_PER_TASK"};
  }
  // The machine's CPUs a node, within what the job has there.
  CpusPerTask c{profile_cpus_per_node, "machine profile"};
  if (tasks.cpus_per_node && !tasks.overcommit && (c.value == 0 || *tasks.cpus_per_node < c.value)) {
    c = {*tasks.cpus_per_node, "SLURM_JOB_CPUS_PER_NODE"};
  }
  c.value /= std::max(1, ppn);
  return c.value > 1 ? std::optional(c) : std::nullopt;  // one CPU: srun's own default
}

PpnLimit slurm_ppn_limit(const SlurmTasks& tasks) {
  PpnLimit limit;
  if (tasks.ntasks_per_node) {
    limit = {*tasks.ntasks_per_node, "SLURM_NTASKS_PER_NODE",
             "SLURM_NTASKS_PER_NODE=" + std::to_string(*tasks.ntasks_per_node)};
  }
  if (auto cpus = tasks.cpu_limit(); cpus && (limit.value == 0 || *cpus < limit.value)) {
    limit = {*cpus, "SLURM_JOB_CPUS_PER_NODE",
             "SLURM_JOB_CPUS_PER_NODE=" + tasks.cpus_text +
                 (tasks.cpus_per_task > 1 ? " with SLURM_CPUS_PER_TASK=" + std::to_string(tasks.cpus_per_task) : "")};
  }
  return limit;
}

}  // namespace ezpz::core
