#include "core/job/machine.hpp"

#include <algorithm>

// toml++ 3.3.0 asserts in debug builds on a table header whose key starts badly ("[[," or
// "[a.,") before reporting the syntax error that release builds report: ezpz wants the error
// (exit 2 naming the line), not an abort (fuzz finding). Only this file includes toml++.
#define TOML_ASSERT(expr) static_cast<void>(0)
#include <toml++/toml.h>

#include "core/base/strings.hpp"

namespace ezpz::core {
namespace {

constexpr std::string_view kKnownKeys =
    "name, description, match_prefix, match_contains, scheduler, launcher, style, cpu_bind, depth, "
    "gpus_per_node, gpu_bind, gpu_reverse, master_addr_suffix, env, shared_prefix, match_env, guess_from_prefix, "
    "at_scale_nodes, env_at_scale, cpus_per_node, launcher_args, sched_args, start_timeout, net_plugin, "
    "net_plugin_hint, modules, yeet_above_nodes";

std::string where(std::string_view source, const toml::node& node) {
  return std::string(source) + ":" + std::to_string(node.source().begin.line);
}

Error key_error(std::string_view source, const toml::node& node, std::string_view key, std::string_view problem) {
  return usage_error(where(source, node) + ": key '" + std::string(key) + "' " + std::string(problem));
}

Expected<std::string> get_string(std::string_view source, const toml::node& node, std::string_view key) {
  if (auto s = node.value<std::string>()) {
    return *s;
  }
  return key_error(source, node, key, "must be a string, e.g. " + std::string(key) + " = \"...\"");
}

Expected<int> get_count(std::string_view source, const toml::node& node, std::string_view key) {
  auto v = node.value<std::int64_t>();
  if (!v || *v < 0 || *v > 1'000'000) {
    return key_error(source, node, key, "must be a whole number >= 0");
  }
  return static_cast<int>(*v);
}

/// A list of lower-case hostname prefixes (match_prefix, shared_prefix).
/// A list of non-empty strings: hostname prefixes (`lower`: kept in lower case) or launcher and
/// scheduler flags (kept as written); `example` shows the form in the error.
Expected<void> set_list(std::string_view source, std::vector<std::string>& out, std::string_view key,
                        const toml::node& node, bool lower, std::string_view example) {
  const auto* arr = node.as_array();
  if (arr == nullptr) {
    return key_error(source, node, key, "must be a list of strings, e.g. " + std::string(example));
  }
  out.clear();
  for (const auto& item : *arr) {
    auto s = item.value<std::string>();
    if (!s || s->empty()) {
      return key_error(source, item, key, "must hold only non-empty strings");
    }
    out.push_back(lower ? to_lower(*s) : *s);
  }
  return {};
}

/// A table of NAME = "text" merged into `out` (env, env_at_scale, match_env); `lower` keeps
/// the texts in lower case and refuses empty ones (match_env compares case-insensitively).
Expected<void> set_pairs(std::string_view source, std::vector<std::pair<std::string, std::string>>& out,
                         std::string_view key, const toml::node& node, bool lower) {
  const auto* tbl = node.as_table();
  if (tbl == nullptr) {
    return key_error(source, node, key, "must be a table of NAME = \"value\"");
  }
  for (const auto& [name, value] : *tbl) {
    auto s = value.value<std::string>();
    const std::string entry = std::string(key) + "." + std::string(name.str());
    if (!s) {
      return key_error(source, value, entry, "must be a string");
    }
    if (lower && s->empty()) {
      return key_error(source, value, entry, "must be non-empty text that the variable's value contains");
    }
    const auto key_name = name.str();  // clang 14 cannot capture a structured binding
    const std::string text = lower ? to_lower(*s) : *s;
    auto existing = std::find_if(out.begin(), out.end(), [&key_name](const auto& kv) { return kv.first == key_name; });
    if (existing != out.end()) {
      existing->second = text;
    } else {
      out.emplace_back(std::string(key_name), text);
    }
  }
  return {};
}

Expected<void> set_bool(std::string_view source, bool& field, std::string_view key, const toml::node& node) {
  auto v = node.value<bool>();
  if (!v) {
    return key_error(source, node, key, "must be true or false");
  }
  field = *v;
  return {};
}

/// Apply one key of a [[machine]] table to `m`.
Expected<void> apply_key(std::string_view source, MachineProfile& m, std::string_view key, const toml::node& node) {
  auto set_string = [&](std::string& field) -> Expected<void> {
    EZPZ_TRY_ASSIGN(auto s, get_string(source, node, key));
    field = s;
    return {};
  };
  if (key == "name") {
    return {};  // handled by the caller
  }
  if (key == "description") {
    return set_string(m.description);
  }
  if (key == "match_contains") {
    auto r = set_string(m.match_contains);
    m.match_contains = to_lower(m.match_contains);
    return r;
  }
  if (key == "cpu_bind") {
    auto r = set_string(m.cpu_bind);
    if (r && starts_with(m.cpu_bind, "--cpu-bind=")) {
      m.cpu_bind = m.cpu_bind.substr(11);
    }
    return r;
  }
  if (key == "master_addr_suffix") {
    return set_string(m.master_addr_suffix);
  }
  if (key == "net_plugin_hint") {
    return set_string(m.net_plugin_hint);
  }
  if (key == "gpu_bind") {
    auto r = set_string(m.gpu_bind);
    if (r && m.gpu_bind != "none" && m.gpu_bind != "cuda" && m.gpu_bind != "ze" && m.gpu_bind != "rocr") {
      return key_error(source, node, key, "must be \"none\", \"cuda\", \"ze\" or \"rocr\"");
    }
    return r;
  }
  if (key == "gpu_reverse" || key == "guess_from_prefix" || key == "modules") {
    return set_bool(source,
                    key == "gpu_reverse"         ? m.gpu_reverse
                    : key == "guess_from_prefix" ? m.guess_from_prefix
                                                 : m.modules,
                    key, node);
  }
  if (key == "launcher") {
    auto r = set_string(m.launcher);
    const std::vector<std::string> known = {"auto", "mpiexec", "mpirun", "srun"};
    if (r && m.launcher.find('/') == std::string::npos &&
        std::find(known.begin(), known.end(), m.launcher) == known.end()) {
      return key_error(source, node, key,
                       "must be auto, mpiexec, mpirun, srun or a launcher's path, not \"" + m.launcher + "\"" +
                           did_you_mean_note(m.launcher, known));
    }
    return r;
  }
  if (key == "scheduler") {
    EZPZ_TRY_ASSIGN(auto s, get_string(source, node, key));
    auto sched = scheduler_from_string(s);
    if (!sched) {
      return key_error(source, node, key, "must be \"pbs\", \"slurm\" or \"local\", not \"" + s + "\"");
    }
    m.scheduler = sched;
    return {};
  }
  if (key == "style") {
    EZPZ_TRY_ASSIGN(auto s, get_string(source, node, key));
    auto style = launcher_style_from_string(s);
    if (!style || *style == LauncherStyle::local) {
      return key_error(source, node, key, "must be one of auto, pals, sophia, srun, openmpi, mpich, not \"" + s + "\"");
    }
    m.style = *style;
    return {};
  }
  if (key == "depth" || key == "gpus_per_node" || key == "at_scale_nodes" || key == "cpus_per_node" ||
      key == "start_timeout" || key == "yeet_above_nodes") {
    EZPZ_TRY_ASSIGN(auto v, get_count(source, node, key));
    (key == "depth"              ? m.depth
     : key == "gpus_per_node"    ? m.gpus_per_node
     : key == "cpus_per_node"    ? m.cpus_per_node
     : key == "start_timeout"    ? m.start_timeout
     : key == "yeet_above_nodes" ? m.yeet_above_nodes
                                 : m.at_scale_nodes) = v;
    return {};
  }
  if (key == "match_prefix" || key == "shared_prefix") {
    return set_list(source, key == "match_prefix" ? m.match_prefix : m.shared_prefix, key, node, true,
                    "[\"x4\", \"aurora\"]");
  }
  if (key == "launcher_args" || key == "sched_args") {
    return set_list(source, key == "launcher_args" ? m.launcher_args : m.sched_args, key, node, false,
                    "[\"--verbose\"]");
  }
  if (key == "net_plugin") {
    return set_list(source, m.net_plugin, key, node, false, "[\"libnccl-net\"]");
  }
  if (key == "env" || key == "env_at_scale") {
    return set_pairs(source, key == "env" ? m.env : m.env_at_scale, key, node, false);
  }
  if (key == "match_env") {
    return set_pairs(source, m.match_env, key, node, true);
  }
  std::vector<std::string> keys;
  for (auto k : split(kKnownKeys, ',')) {
    keys.emplace_back(trim(k));
  }
  return key_error(
      source, node, key,
      "is not a machine setting" + did_you_mean_note(key, keys) + "; known keys: " + std::string(kKnownKeys));
}

/// The whole config text as TOML; a syntax error names the file and line.
Expected<toml::table> parse_document(std::string_view text, std::string_view source) {
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return usage_error(std::string(source) + ":" + std::to_string(e.source().begin.line) + ": " +
                       std::string(e.description()) + " (fix the TOML syntax)");
  }
}

}  // namespace

std::string_view to_string(LauncherStyle s) {
  switch (s) {
    case LauncherStyle::auto_detect:
      return "auto";
    case LauncherStyle::pals:
      return "pals";
    case LauncherStyle::sophia:
      return "sophia";
    case LauncherStyle::srun:
      return "srun";
    case LauncherStyle::openmpi:
      return "openmpi";
    case LauncherStyle::mpich:
      return "mpich";
    case LauncherStyle::local:
      return "local";
  }
  return "auto";
}

std::optional<LauncherStyle> launcher_style_from_string(std::string_view name) {
  for (auto s : {LauncherStyle::auto_detect, LauncherStyle::pals, LauncherStyle::sophia, LauncherStyle::srun,
                 LauncherStyle::openmpi, LauncherStyle::mpich, LauncherStyle::local}) {
    if (to_string(s) == name) {
      return s;
    }
  }
  return std::nullopt;
}

bool MachineProfile::matches(std::string_view lower_hostname) const {
  if (!match_contains.empty() && lower_hostname.find(match_contains) == std::string_view::npos) {
    return false;
  }
  return std::any_of(match_prefix.begin(), match_prefix.end(),
                     [&](const std::string& p) { return starts_with(lower_hostname, p); });
}

Expected<MachineSet> MachineSet::builtin() {
  MachineSet set;
  set.profiles_ = builtin_profiles();
  return set;
}

Expected<MachineSet> MachineSet::builtin_parsed() {
  MachineSet set;
  if (auto r = set.merge_toml(builtin_machines_toml(), "<built-in machines.toml>"); !r) {
    return Error{ExitCode::internal, r.error().message};
  }
  return set;
}

Expected<void> MachineSet::merge_toml(std::string_view text, std::string_view source) {
  EZPZ_TRY_ASSIGN(auto parsed, parse_document(text, source));
  const toml::table& doc = parsed;
  std::vector<MachineProfile> added;
  for (const auto& [top_key, top_node] : doc) {
    if (top_key.str() == "yeet" || top_key.str() == "launch") {
      continue;  // read by yeet_settings_from_toml, launch_settings_from_toml
    }
    if (top_key.str() != "machine") {
      return key_error(source, top_node, top_key.str(),
                       "is not a top-level setting; machines go in [[machine]] tables");
    }
    const auto* arr = top_node.as_array();
    if (arr == nullptr) {
      return key_error(source, top_node, "machine", "must be written as [[machine]] tables");
    }
    for (const auto& entry : *arr) {
      const auto* tbl = entry.as_table();
      if (tbl == nullptr) {
        return key_error(source, entry, "machine", "entries must be tables");
      }
      const auto* name_node = tbl->get("name");
      auto name = name_node != nullptr ? name_node->value<std::string>() : std::nullopt;
      if (!name || name->empty()) {
        return usage_error(where(source, entry) + ": [[machine]] needs a name = \"...\" key");
      }
      auto existing = std::find_if(profiles_.begin(), profiles_.end(), [&](const auto& m) { return m.name == *name; });
      MachineProfile m = existing != profiles_.end() ? *existing : MachineProfile{};
      m.name = *name;
      for (const auto& [key, value] : *tbl) {
        EZPZ_TRY(apply_key(source, m, key.str(), value));
      }
      if (existing != profiles_.end()) {
        *existing = std::move(m);
      } else {
        added.push_back(std::move(m));
      }
    }
  }
  profiles_.insert(profiles_.begin(), added.begin(), added.end());
  return {};
}

Expected<YeetSettings> yeet_settings_from_toml(std::string_view text, std::string_view source) {
  EZPZ_TRY_ASSIGN(auto parsed, parse_document(text, source));
  const toml::table& doc = parsed;
  YeetSettings settings;
  settings.source = std::string(source);
  const auto* yeet = doc.get("yeet");
  if (yeet == nullptr) {
    return settings;
  }
  const auto* tbl = yeet->as_table();
  if (tbl == nullptr) {
    return key_error(source, *yeet, "yeet", "must be a table: [yeet]");
  }
  auto& roots = settings.allowed_roots;
  for (const auto& [key, value] : *tbl) {
    if (key.str() == "transport") {
      const auto t = value.value<std::string>();
      if (!t || (*t != "auto" && *t != "launcher" && *t != "ssh")) {
        return key_error(source, value, key.str(), "must be one of \"auto\", \"launcher\", \"ssh\"");
      }
      settings.transport = *t;
      continue;
    }
    if (key.str() == "destination") {
      const auto d = value.value<std::string>();
      if (!d) {  // its placeholders are checked where yeet reads it (check_destination_pattern)
        return key_error(source, value, key.str(), "must be a string, such as \"/tmp/{user}/{name}\"");
      }
      settings.destination = *d;
      continue;
    }
    if (key.str() != "allowed_roots") {
      return key_error(source, value, key.str(),
                       "is not a yeet setting; known keys: allowed_roots, destination, transport");
    }
    const auto* arr = value.as_array();
    if (arr == nullptr) {
      return key_error(source, value, key.str(), "must be a list of absolute paths, e.g. [\"/scratch/local\"]");
    }
    for (const auto& item : *arr) {
      auto s = item.value<std::string>();
      if (!s || s->empty() || s->front() != '/' || *s == "/") {
        return key_error(source, item, key.str(), "must hold absolute paths other than /");
      }
      roots.push_back(*s);
    }
  }
  return settings;
}

Expected<LaunchSettings> launch_settings_from_toml(std::string_view text, std::string_view source) {
  EZPZ_TRY_ASSIGN(auto parsed, parse_document(text, source));
  LaunchSettings settings;
  const auto* launch = parsed.get("launch");
  if (launch == nullptr) {
    return settings;
  }
  const auto* tbl = launch->as_table();
  if (tbl == nullptr) {
    return key_error(source, *launch, "launch", "must be a table: [launch]");
  }
  for (const auto& [key, value] : *tbl) {
    if (key.str() != "omp_notice") {
      return key_error(source, value, key.str(), "is not a launch setting; known keys: omp_notice");
    }
    EZPZ_TRY(set_bool(source, settings.omp_notice, key.str(), value));
  }
  return settings;
}

const MachineProfile* MachineSet::find(std::string_view name) const {
  auto lower = to_lower(name);
  auto it = std::find_if(profiles_.begin(), profiles_.end(), [&](const auto& m) { return m.name == lower; });
  return it == profiles_.end() ? nullptr : &*it;
}

std::vector<std::string> MachineSet::names() const {
  std::vector<std::string> out;
  for (const auto& m : profiles_) {
    out.push_back(m.name);
  }
  return out;
}

const std::vector<std::string_view>& builtin_machine_names() {
  static const std::vector<std::string_view> names = {"aurora", "sunspot",  "sirius",     "polaris",
                                                      "sophia", "frontier", "perlmutter", "local"};
  return names;
}

}  // namespace ezpz::core
