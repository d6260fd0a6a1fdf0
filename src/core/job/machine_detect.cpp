// Which machine this is: a hostname prefix only one site uses decides alone; a prefix other
// sites share (nid, login, x1, x3, x4) needs a second signal from the site's own environment
// (match_env), else it is a guess that launch and doctor name, or the generic profile.
#include <algorithm>

#include "core/base/strings.hpp"
#include "core/job/machine.hpp"

namespace ezpz::core {
namespace {

std::string quoted(std::string_view s) {
  return "'" + std::string(s) + "'";
}

/// The first of `prefixes` that `lower_hostname` starts with, or nullopt.
std::optional<std::string> prefix_of(const std::vector<std::string>& prefixes, std::string_view lower_hostname) {
  auto it = std::find_if(prefixes.begin(), prefixes.end(),
                         [&](const std::string& p) { return starts_with(lower_hostname, p); });
  return it == prefixes.end() ? std::nullopt : std::optional<std::string>(*it);
}

/// "NAME contains 'text'" for the first match_env entry the environment satisfies, or nullopt.
std::optional<std::string> signal_of(const MachineProfile& m, const Env& env) {
  for (const auto& [name, text] : m.match_env) {
    auto value = env.get(name);
    if (value && to_lower(*value).find(text) != std::string::npos) {
      return name + " contains " + quoted(text);
    }
  }
  return std::nullopt;
}

/// "NERSC_HOST or SLURM_CLUSTER_NAME containing 'perlmutter'": what would have confirmed `m`.
std::string wanted_signals(const MachineProfile& m) {
  if (m.match_env.empty()) {
    return "no environment signal is configured for it";
  }
  std::vector<std::string> names;
  std::string text;
  for (const auto& [name, t] : m.match_env) {
    names.push_back(name);
    text = t;
  }
  const bool same_text =
      std::all_of(m.match_env.begin(), m.match_env.end(), [&text](const auto& kv) { return kv.second == text; });
  if (same_text) {
    return "no " + join(names, " or ") + " containing " + quoted(text);
  }
  std::vector<std::string> each;
  for (const auto& [name, t] : m.match_env) {
    each.push_back(name + " containing " + quoted(t));
  }
  return "no " + join(each, " or ");
}

}  // namespace

const MachineProfile& MachineSet::generic() const {
  static const MachineProfile fallback = [] {
    MachineProfile m;
    m.name = "local";
    return m;
  }();
  const auto* local = find("local");
  return local != nullptr ? *local : fallback;
}

MachineMatch MachineSet::identify(const Env& env) const {
  const auto lower = to_lower(env.hostname);
  const std::string host = "hostname " + quoted(env.hostname);
  // 1. A prefix of this machine's own.
  for (const auto& m : profiles_) {
    if (m.matches(lower)) {
      auto p = prefix_of(m.match_prefix, lower);
      std::string reason = host + " starts with " + quoted(*p);
      if (!m.match_contains.empty()) {
        reason += " and contains " + quoted(m.match_contains);
      }
      return {&m, MachineEvidence::hostname, reason};
    }
  }
  // 2. A shared prefix with the site's own signal.
  for (const auto& m : profiles_) {
    if (auto p = prefix_of(m.shared_prefix, lower)) {
      if (auto signal = signal_of(m, env)) {
        return {&m, MachineEvidence::signal, host + " starts with " + quoted(*p) + " and " + *signal};
      }
    }
  }
  // 3. A shared prefix alone: a guess, or the generic profile.
  std::vector<std::string> names;
  std::vector<std::string> missing;
  std::string shared;
  for (const auto& m : profiles_) {
    auto p = prefix_of(m.shared_prefix, lower);
    if (!p) {
      continue;
    }
    if (m.guess_from_prefix) {
      return {&m, MachineEvidence::guessed,
              host + " starts with " + quoted(*p) + ", which " + m.name + " shares with other sites, and there is " +
                  wanted_signals(m)};
    }
    shared = shared.empty() ? *p : shared;
    names.push_back(m.name);
    missing.push_back(wanted_signals(m));
  }
  if (!names.empty()) {
    return {&generic(), MachineEvidence::fallback,
            host + " starts with " + quoted(shared) + ", which " + join(names, " and ") +
                (names.size() == 1 ? " shares" : " share") + " with other sites, and there is " + join(missing, "; ")};
  }
  return {&generic(), MachineEvidence::fallback, "no machine profile matches " + host};
}

std::string expand_machine_value(std::string_view value, const Env& env) {
  std::string job = "nojob";
  if (auto id = env.first_of({"SLURM_JOB_ID", "SLURM_JOBID", "PBS_JOBID"})) {
    job = id->second.substr(0, id->second.find('.'));
    for (auto& c : job) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '_' || c == '-';
      if (!ok) {
        c = '_';
      }
    }
    if (job.empty()) {
      job = "nojob";
    }
  }
  std::string out;
  for (std::size_t i = 0; i < value.size();) {
    if (value.compare(i, 5, "{uid}") == 0) {
      out += std::to_string(env.uid);
      i += 5;
    } else if (value.compare(i, 8, "{job_id}") == 0) {
      out += job;
      i += 8;
    } else {
      out += value[i++];
    }
  }
  return out;
}

}  // namespace ezpz::core
