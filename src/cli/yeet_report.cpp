#include "cli/yeet_report.hpp"

#include <cstdio>

#include "core/base/shell.hpp"
#include "core/base/strings.hpp"

namespace ezpz::cli {

std::string fixed1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

std::string left_out(const core::TreeStats& size, const std::vector<std::string>& names, std::string_view flag) {
  if (size.excluded_dirs == 0) {
    return {};
  }
  return "  left out: " +
         core::count_of(size.excluded_dirs, core::join(names, "/") + " directory",
                        core::join(names, "/") + " directories") +
         " (" + core::count_of(size.excluded_files, "file") + ", " + core::human_bytes(size.excluded_bytes) + "; " +
         std::string(flag) + " keeps them)\n";
}

nlohmann::json left_out_json(const core::TreeStats& size, const std::vector<std::string>& names) {
  return {
      {"names", names}, {"dirs", size.excluded_dirs}, {"files", size.excluded_files}, {"bytes", size.excluded_bytes}};
}

void print_plan(std::ostream& out, const YeetReport& r) {
  const auto& targets = r.nodes.targets;
  out << "Source: " << r.plan.source << " (" << core::human_bytes(r.size.bytes) << ", "
      << core::count_of(r.size.files, "file") << ")\n"
      << left_out(r.size, r.plan.excludes, "--include-pycache") << "Target: " << r.plan.destination << "/ on "
      << r.nodes.total_nodes << (r.nodes.total_nodes == 1 ? " node" : " nodes") << "\n  local:  " << r.host << " ("
      << core::to_string(r.plan.method) << ")\n";
  if (!targets.empty()) {
    out << "  remote: " << core::count_of(targets.size(), "node") << " through a relay tree, " << r.nodes.fanout
        << " per relay: " << core::encode_tree(r.nodes.tree) << "\n  transport: " << r.nodes.transport() << " ("
        << r.nodes.transport_why << ")\n";
  }
  if (r.estimate && targets.empty()) {
    out << "  would write " << core::count_of(r.estimate->files, "file") << " (" << core::human_bytes(r.estimate->bytes)
        << ") and remove " << core::count_of(r.estimate->removed, "entry", "entries") << " in " << r.plan.destination
        << "\n";
  } else if (r.estimate) {
    out << "  changed since the last yeet: " << core::count_of(r.estimate->files, "file") << ", "
        << core::human_bytes(r.estimate->bytes) << ", " << r.estimate->removed
        << " removed: only these (as deltas where smaller) go to the other nodes\n";
  } else if (r.dry_run && targets.empty() && !r.estimate_tried && r.plan.kind == core::SourceKind::directory) {
    out << "  would write " << core::count_of(r.size.files, "file") << " (" << core::human_bytes(r.size.bytes)
        << ") to " << r.plan.destination
        << (r.plan.method == core::CopyMethod::sync ? " (new)" : " (a full copy, whatever is there now)") << "\n";
  } else if (!r.estimate_tried && !targets.empty()) {
    out << "  other nodes get " << (r.delta ? "what changed since the last yeet" : "everything (" + r.full_reason + ")")
        << "\n";
  }
}

namespace {

/// A stream level as said: 0 is no compression (raw blocks, where the link outruns zstd).
std::string level_text(int level) {
  return level == 0 ? "off" : std::to_string(level);
}

void print_local(std::ostream& out, const YeetReport& r) {
  out << "    ok " << r.host << " (local, " << core::to_string(r.plan.method) << ") " << fixed1(r.seconds) << "s (";
  const char* sep = "";
  for (const auto& [step, secs] : r.steps) {
    out << sep << step.substr(0, step.size() - 2) << " " << fixed1(secs) << "s";
    sep = ", ";
  }
  out << "): " << r.copied.copied_files << " files written";
  if (r.plan.method == core::CopyMethod::sync) {
    out << ", " << r.copied.deleted << " removed";
  }
  if (!r.patch.rewritten.empty() || !r.patch.relinked.empty()) {
    out << ", " << r.patch.rewritten.size() << " patched, " << r.patch.relinked.size() << " relinked";
  }
  out << "\n";
}

void print_usage_hint(std::ostream& out, const YeetReport& r) {
  if (!r.tally.failed.empty()) {  // no hint to activate what some nodes lack
    out << "  " << (r.env_kind == core::EnvKind::none ? "The copy" : "The environment") << " is in "
        << r.plan.destination << "/ on " << r.tally.succeeded << " of " << core::count_of(r.nodes.total_nodes, "node")
        << "; missing on " << core::join(r.tally.failed, ", ") << ".\n";
    return;
  }
  switch (r.env_kind) {
    case core::EnvKind::venv:
      // Lines to paste: quoted as a shell reads them.
      out << "  To use this environment:\n    deactivate 2>/dev/null\n    source "
          << core::shell_quote(r.plan.destination + "/bin/activate")
          << "\n  Keep your working directory on a shared filesystem: " << r.plan.destination << " is node-local.\n";
      break;
    case core::EnvKind::conda:
      out << "  To use this environment:\n    conda activate " << core::shell_quote(r.plan.destination) << "\n";
      break;
    case core::EnvKind::none:
      out << "  Synced to " << r.plan.destination << "/ on " << r.tally.succeeded
          << (r.tally.succeeded == 1 ? " node.\n" : " nodes.\n");
      break;
  }
}

}  // namespace

void print_yeet_report(std::ostream& out, const YeetReport& r) {
  print_local(out, r);
  if (r.bundle) {
    out << "  delta: " << r.bundle->files << " entries whole (" << core::human_bytes(r.bundle->bytes) << "), "
        << r.bundle->deltas << " librsync deltas (" << core::human_bytes(r.bundle->delta_bytes) << "), "
        << r.bundle->removed << " removed\n";
  }
  if (r.stream.bytes > 0) {
    out << "  stream: " << core::human_bytes(r.stream.bytes) << " of zstd, level "
        << (r.stream.level_min == r.stream.level_max
                ? level_text(r.stream.level_min)
                : level_text(r.stream.level_min) + " to " + level_text(r.stream.level_max) + " (adaptive)")
        << "\n";
  }
  for (const auto& n : r.remote) {
    if (n.ok()) {
      out << "    ok " << n.host << " " << fixed1(n.seconds) << "s\n";
    } else {
      out << "    x  " << n.host << ": " << n.error << "\n";
    }
  }
  const auto total = r.nodes.total_nodes;
  if (r.tally.failed.empty()) {
    out << "Done in " << fixed1(r.seconds) << "s on " << total << (total == 1 ? " node" : " nodes") << "\n\n";
  } else {
    out << r.tally.failed.size() << " of " << core::count_of(total, "node")
        << " failed: " << core::join(r.tally.failed, ", ")
        << (r.tally.threshold_met ? " (threshold met; listed in " + r.sentinel + ")" : "") << "\n\n";
  }
  print_usage_hint(out, r);
}

namespace {

nlohmann::json incremental_json(const YeetReport& r) {
  nlohmann::json j = {{"mode", r.delta ? "delta" : "full"}, {"reason", r.full_reason}};
  if (r.estimate) {
    j["estimate"] = {{"files", r.estimate->files}, {"bytes", r.estimate->bytes}, {"removed", r.estimate->removed}};
  }
  if (r.manifest_digest) {
    j["manifest_digest"] = *r.manifest_digest;
  }
  if (r.ran && !r.nodes.targets.empty()) {
    j["full_copies"] = nlohmann::json::array();
    for (const auto& [host, why] : r.full_copies) {
      j["full_copies"].push_back({{"host", host}, {"why", why}});
    }
  }
  if (r.bundle) {
    j.update({{"files", r.bundle->files},
              {"bytes", r.bundle->bytes},
              {"deltas", r.bundle->deltas},
              {"delta_bytes", r.bundle->delta_bytes},
              {"removed", r.bundle->removed}});
  }
  return j;
}

/// A node's steps as {"open_s": 0.01, ...} (the relay's order).
nlohmann::json steps_json(const core::StepTimes& steps) {
  auto j = nlohmann::json::object();
  for (const auto& [step, secs] : steps) {
    j[step] = secs;
  }
  return j;
}

nlohmann::json remote_json(const std::vector<core::NodeResult>& remote) {
  auto nodes = nlohmann::json::array();
  for (const auto& n : remote) {
    nodes.push_back({{"host", n.host},
                     {"ok", n.ok()},
                     {"outcome", core::to_string(n.outcome)},
                     {"seconds", n.seconds},
                     {"bytes", n.bytes},
                     {"digest_ok", n.digest_ok},
                     {"repaired_from", n.repaired_from},
                     {"reattached_to", n.reattached_to},
                     {"error", n.error},
                     {"steps", steps_json(n.steps)}});
  }
  return nodes;
}

void add_outcome(nlohmann::json& j, const YeetReport& r) {
  j["steps"] = nlohmann::json::object();
  for (const auto& [step, secs] : r.steps) {
    j["steps"][step] = secs;
  }
  j["seconds"] = r.seconds;
  j["copied_files"] = r.copied.copied_files;
  if (r.copied.checks) {
    j["source_checks"] = {{"compression", r.copied.checks->compression},
                          {"layer_checked", r.copied.checks->layer_checked},
                          {"sha256", r.copied.checks->sha256}};
  }
  j["deleted"] = r.copied.deleted;
  j["patched"] = r.patch.rewritten;
  j["relinked"] = r.patch.relinked;
  j["binary_prefix"] = r.patch.binary_prefix;
  j["remote"] = remote_json(r.remote);
  if (r.stream.bytes > 0) {
    j["stream"] = {{"bytes", r.stream.bytes},
                   {"level_min", r.stream.level_min},
                   {"level_max", r.stream.level_max},
                   {"level_final", r.stream.level_final}};
  }
  j["failed"] = r.tally.failed;
  j["succeeded"] = r.tally.succeeded;
  j["threshold_met"] = r.tally.threshold_met;
}

}  // namespace

nlohmann::json to_json(const YeetReport& r) {
  auto nodes = nlohmann::json::array({r.host});
  for (const auto& t : r.nodes.targets) {
    nodes.push_back(t);
  }
  nlohmann::json j = {
      {"source", r.plan.source},
      {"source_origin", r.plan.source_origin},
      {"kind", core::to_string(r.plan.kind)},
      {"destination", r.plan.destination},
      {"method", core::to_string(r.plan.method)},
      {"env", core::to_string(r.ran ? r.env_kind : r.plan.env_kind)},
      {"bytes", r.size.bytes},
      {"files", r.size.files},
      {"left_out", left_out_json(r.size, r.plan.excludes)},
      {"nodes", nodes},
      {"relay_tree", core::encode_tree(r.nodes.tree)},
      {"strategy", core::to_string(r.nodes.strategy)},
      {"transport", r.nodes.transport()},
      {"transport_kind", core::to_string(r.nodes.spec.reach.transport)},
      {"transport_why", r.nodes.transport_why},
      {"dry_run", r.dry_run},
      {"incremental", incremental_json(r)},
  };
  if (r.ran) {
    add_outcome(j, r);
  }
  j["ok"] = !r.ran || r.tally.threshold_met;
  return j;
}

}  // namespace ezpz::cli
