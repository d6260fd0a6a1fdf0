#include "cli/yeet_report.hpp"

#include <cstdio>

#include "core/strings.hpp"

namespace ezpz::cli {

std::string fixed1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

void print_yeet_report(std::ostream& out, const YeetOutcome& o) {
  out << "    ok " << o.host << " (local, " << core::to_string(o.plan.method) << ") " << fixed1(o.seconds) << "s (";
  const char* sep = "";
  for (const auto& [step, secs] : o.steps.items()) {
    out << sep << step.substr(0, step.size() - 2) << " " << fixed1(secs.get<double>()) << "s";
    sep = ", ";
  }
  out << "): " << o.copied.copied_files << " files written";
  if (o.plan.method == core::CopyMethod::sync) {
    out << ", " << o.copied.deleted << " removed";
  }
  if (!o.patch.rewritten.empty() || !o.patch.relinked.empty()) {
    out << ", " << o.patch.rewritten.size() << " patched, " << o.patch.relinked.size() << " relinked";
  }
  out << "\n";
  if (o.delta) {
    out << "  delta: " << o.bundle.files << " entries whole (" << core::human_bytes(o.bundle.bytes) << "), "
        << o.bundle.deltas << " librsync deltas (" << core::human_bytes(o.bundle.delta_bytes) << "), "
        << o.bundle.removed << " removed\n";
  }
  if (o.stream.bytes > 0) {
    out << "  stream: " << core::human_bytes(o.stream.bytes) << " of zstd, level "
        << (o.stream.level_min == o.stream.level_max
                ? std::to_string(o.stream.level_min)
                : std::to_string(o.stream.level_min) + "-" + std::to_string(o.stream.level_max) + " (adaptive)")
        << "\n";
  }
  for (const auto& r : o.remote) {
    if (r.ok) {
      out << "    ok " << r.host << " " << fixed1(r.seconds) << "s\n";
    } else {
      out << "    x  " << r.host << ": " << r.error << "\n";
    }
  }
  if (o.failed.empty()) {
    out << "Done in " << fixed1(o.seconds) << "s on " << o.total_nodes << (o.total_nodes == 1 ? " node" : " nodes")
        << "\n\n";
  } else {
    out << o.failed.size() << "/" << o.total_nodes << " node(s) failed: " << core::join(o.failed, ", ")
        << (o.threshold_met ? " (threshold met; listed in " + o.sentinel + ")" : "") << "\n\n";
  }
  switch (o.env_kind) {
    case core::EnvKind::venv:
      out << "  To use this environment:\n    deactivate 2>/dev/null\n    source " << o.plan.destination
          << "/bin/activate\n  Keep your working directory on a shared filesystem: " << o.plan.destination
          << " is node-local.\n";
      break;
    case core::EnvKind::conda:
      out << "  To use this environment:\n    conda activate " << o.plan.destination << "\n";
      break;
    case core::EnvKind::none:
      out << "  Synced to " << o.plan.destination << "/ on " << o.succeeded
          << (o.succeeded == 1 ? " node.\n" : " nodes.\n");
      break;
  }
}

}  // namespace ezpz::cli
