#include "core/train/torch_choice.hpp"

#include <array>
#include <tuple>
#include <utility>

#include "core/base/strings.hpp"

namespace ezpz::core {
namespace {

/// "cuda:1" -> ("cuda", 1); "cuda" -> ("cuda", nullopt). An index that is not a number stays in
/// the type, for torch::Device to reject with its own message.
std::pair<std::string, std::optional<int>> split_device(std::string_view device) {
  const auto colon = device.find(':');
  if (colon == std::string_view::npos) {
    return {std::string(device), std::nullopt};
  }
  const auto index_text = device.substr(colon + 1);
  if (index_text == "0") {
    return {std::string(device.substr(0, colon)), 0};
  }
  if (auto index = parse_positive_int(index_text)) {
    return {std::string(device.substr(0, colon)), *index};
  }
  return {std::string(device), std::nullopt};
}

std::string detected_device_type(const DeviceFacts& facts) {
  if (facts.has_xpu) {
    return "xpu";
  }
  if (facts.cuda_device_count > 0) {
    return "cuda";
  }
  if (facts.has_mps) {
    return "mps";
  }
  return "cpu";
}

/// The detection data of src/core/job/machines.toml's built-in machines, in its order (a unit test
/// checks every entry against MachineSet::builtin()).
using Names = std::array<std::string_view, 2>;  ///< up to two; "" = none
struct MachineRule {
  std::string_view name;
  Names own_prefix;
  std::string_view contains;
  Names shared_prefix;
  Names signal_vars;
  std::string_view signal_text;
  bool guess;
};

const std::array<MachineRule, 7>& machine_rules() {
  static const std::array<MachineRule, 7> rules = {{
      {"aurora", {"aurora"}, "", {"x4"}, {"PBS_JOBID", "PBS_O_HOST"}, "aurora", true},
      {"sunspot", {"sunspot"}, "", {"x1"}, {"PBS_JOBID", "PBS_O_HOST"}, "sunspot", true},
      {"sirius", {"sirius", "x3"}, "sirius", {"x3"}, {"PBS_JOBID", "PBS_O_HOST"}, "sirius", false},
      {"polaris", {"polaris"}, "", {"x3"}, {"PBS_JOBID", "PBS_O_HOST"}, "polaris", true},
      {"sophia", {"sophia"}, "", {}, {}, "", false},
      {"frontier", {"frontier"}, "", {"login"}, {"LMOD_SYSTEM_NAME", "SLURM_CLUSTER_NAME"}, "frontier", false},
      {"perlmutter", {"perlmutter"}, "", {"nid", "login"}, {"NERSC_HOST", "SLURM_CLUSTER_NAME"}, "perlmutter", false},
  }};
  return rules;
}

bool any_prefix(const Names& prefixes, std::string_view lower_hostname) {
  for (auto p : prefixes) {
    if (!p.empty() && starts_with(lower_hostname, p)) {
      return true;
    }
  }
  return false;
}

bool has_signal(const MachineRule& rule, const Env& env) {
  for (auto name : rule.signal_vars) {
    auto value = name.empty() ? std::nullopt : env.get(name);
    if (value && to_lower(*value).find(rule.signal_text) != std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::string default_backend(std::string_view device_type) {
  if (device_type == "cuda") {
    return "nccl";
  }
  if (device_type == "xpu") {
    return "xccl";
  }
  return "gloo";
}

TorchChoice choose_torch(const TorchWants& wants, const DeviceFacts& facts) {
  TorchChoice choice;
  const std::string_view asked = !wants.device.empty() ? wants.device : wants.env_device;
  if (asked.empty()) {
    choice.device_type = detected_device_type(facts);
  } else {
    std::tie(choice.device_type, choice.index) = split_device(asked);
  }
  if (!wants.backend.empty()) {
    choice.backend = wants.backend;
  } else if (!wants.env_backend.empty()) {
    choice.backend = wants.env_backend;
  } else {
    choice.backend = default_backend(choice.device_type);
  }
  return choice;
}

std::string device_string(const TorchChoice& choice, int local_rank, const DeviceFacts& facts) {
  const auto& type = choice.device_type;
  if (type == "cpu" || type == "mps") {
    return type;
  }
  int index = choice.index.value_or(local_rank);
  if (type == "cuda" && !choice.index) {
    index = facts.cuda_device_count > 0 ? local_rank % facts.cuda_device_count : 0;
  }
  return type + ":" + std::to_string(index);
}

std::string builtin_machine_name(const Env& env) {
  if (auto named = env.get("EZPZ_MACHINE")) {
    return *named;
  }
  const auto host = to_lower(env.hostname);
  for (const auto& rule : machine_rules()) {
    if (any_prefix(rule.own_prefix, host) && (rule.contains.empty() || host.find(rule.contains) != std::string::npos)) {
      return std::string(rule.name);
    }
  }
  for (const auto& rule : machine_rules()) {
    if (any_prefix(rule.shared_prefix, host) && has_signal(rule, env)) {
      return std::string(rule.name);
    }
  }
  for (const auto& rule : machine_rules()) {
    if (rule.guess && any_prefix(rule.shared_prefix, host)) {
      return std::string(rule.name);
    }
  }
  return "local";
}

}  // namespace ezpz::core
