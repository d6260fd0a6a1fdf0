#include "core/launch/failure.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/base/json_fields.hpp"
#include "core/base/strings.hpp"
#include "core/job/kill.hpp"
#include "core/launch/rank_output.hpp"

namespace ezpz::core {
namespace {

std::string signal_label(int sig) {
  const char* name = sigabbrev_np(sig);
  return std::to_string(sig) + (name != nullptr ? std::string(" (SIG") + name + ")" : "");
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", std::max(0.0, s));
  return buf;
}

}  // namespace

std::string exit_report_json(const RankExit& e) {
  return nlohmann::json{{"rank", e.rank},
                        {"local_rank", e.local_rank},
                        {"host", e.host},
                        {"exit_code", e.exit_code},
                        {"signal", e.signal},
                        {"exec_errno", e.exec_errno},
                        {"program", e.program},
                        {"time", e.time},
                        {"pid", e.pid},
                        {"last_lines", e.last_lines},
                        {"kill_signal", e.kill_signal}}
             .dump() +
         "\n";
}

std::optional<RankExit> parse_exit_report(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("rank") || !j.contains("time")) {
    return std::nullopt;
  }
  RankExit e;
  long long pid = 0;
  namespace f = json_fields;
  const bool ok = f::get(j, "rank", e.rank) && f::get(j, "local_rank", e.local_rank) && f::get(j, "host", e.host) &&
                  f::get(j, "exit_code", e.exit_code) && f::get(j, "signal", e.signal) &&
                  f::get(j, "exec_errno", e.exec_errno) && f::get(j, "program", e.program) &&
                  f::get(j, "time", e.time) && f::get(j, "pid", pid);
  if (!ok || e.rank < 0) {
    return std::nullopt;
  }
  e.pid = static_cast<long>(pid);
  if (j.contains("kill_signal") && !f::get(j, "kill_signal", e.kill_signal)) {
    return std::nullopt;
  }
  if (auto lines = j.find("last_lines"); lines != j.end() && lines->is_array()) {
    for (const auto& l : *lines) {
      if (l.is_string()) {
        e.last_lines.push_back(l.get<std::string>());
      }
    }
  }
  return e;
}

std::optional<RecordedError> parse_error_file(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("message")) {
    return std::nullopt;
  }
  const auto& m = j["message"];
  RecordedError out;
  if (m.is_string()) {
    out.message = m.get<std::string>();
    return out;
  }
  if (!m.is_object() || !json_fields::get(m, "message", out.message)) {
    return std::nullopt;
  }
  if (auto extra = m.find("extraInfo"); extra != m.end() && extra->is_object()) {
    (void)json_fields::get(*extra, "py_callstack", out.traceback);
  }
  return out;
}

std::string last_frames(const std::string& traceback, int frames) {
  frames = std::max(frames, 1);
  auto lines = split(traceback, '\n');
  std::vector<std::size_t> frame_starts;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (starts_with(lines[i], "  File ")) {
      frame_starts.push_back(i);
    }
  }
  std::string out;
  std::size_t from = 0;
  if (static_cast<int>(frame_starts.size()) > frames) {
    out = "Traceback (most recent call last, " + std::to_string(frames) + " of " + std::to_string(frame_starts.size()) +
          " frames):\n";
    from = frame_starts[frame_starts.size() - static_cast<std::size_t>(frames)];
  }
  for (std::size_t i = from; i < lines.size(); ++i) {
    if (!lines[i].empty() || i + 1 < lines.size()) {
      out += std::string(lines[i]) + "\n";
    }
  }
  while (!out.empty() && out.back() == '\n') {
    out.pop_back();
  }
  return out;
}

std::optional<FirstFailure> first_failure(const std::vector<RankExit>& exits, double start) {
  if (exits.empty()) {
    return std::nullopt;
  }
  auto first = std::min_element(exits.begin(), exits.end(), [](const RankExit& a, const RankExit& b) {
    return a.time != b.time ? a.time < b.time : a.rank < b.rank;
  });
  FirstFailure f;
  f.exit = *first;
  f.seconds = first->time - start;
  f.failed_ranks = static_cast<int>(exits.size());
  f.not_found = static_cast<int>(
      std::count_if(exits.begin(), exits.end(), [](const RankExit& e) { return e.exec_errno == ENOENT; }));
  return f;
}

std::string where(const RankExit& e) {
  return "rank " + std::to_string(e.rank) + (e.host.empty() ? "" : " on " + e.host);
}

std::string describe_exit(const RankExit& e) {
  if (e.exec_errno == ENOENT) {
    return "could not start: " + e.program + ": command not found";
  }
  if (e.exec_errno != 0) {
    return "could not start " + e.program + ": " + std::strerror(e.exec_errno);
  }
  if (e.kill_signal > 0) {
    return "was stopped by ezpz kill (" + signal_name(e.kill_signal) + ")";
  }
  if (e.signal > 0) {
    return "was killed by signal " + signal_label(e.signal);
  }
  return "exited with code " + std::to_string(e.exit_code);
}

std::vector<std::string> failure_summary(const FirstFailure& f) {
  const auto& e = f.exit;
  std::vector<std::string> lines;
  std::string first = e.kill_signal > 0
                          ? "job failed: stopped by ezpz kill: " + where(e) + " got " + signal_name(e.kill_signal) +
                                " first, " + seconds_text(f.seconds) + " s after the start"
                          : "job failed: " + where(e) + " failed first: it " + describe_exit(e) + ", " +
                                seconds_text(f.seconds) + " s after the start";
  if (f.failed_ranks > 1 && e.kill_signal == 0) {  // (after ezpz kill, the others were stopped)
    first += " (" + std::to_string(f.failed_ranks) + " ranks failed)";
  }
  lines.push_back(first);
  if (f.not_found > 0) {
    lines.push_back("  " + e.program + " was not found on " + std::to_string(f.not_found) +
                    (f.not_found == 1 ? " rank" : " ranks") +
                    ": check the name, PATH on the compute nodes, or the modules the job loads");
  }
  if (!f.error && !e.last_lines.empty()) {
    lines.push_back("  its last " + count_of(e.last_lines.size(), "line") + " on stderr:");
    const auto label = rank_label(e.host, e.rank);
    for (const auto& line : e.last_lines) {
      lines.push_back("  " + label + line);
    }
  }
  if (f.error) {
    lines.push_back("  " + f.error->message);
    if (!f.error->traceback.empty()) {
      const auto frames = last_frames(f.error->traceback, 5);
      for (auto line : split(frames, '\n')) {
        lines.push_back("  | " + std::string(line));
      }
    }
    lines.push_back("  (from " + f.error_file + ")");
  }
  if (!f.output_file.empty()) {
    lines.push_back("  full output: " + f.output_file);
  }
  return lines;
}

int job_exit_code(const RunResult& result, const std::optional<FirstFailure>& failure) {
  const bool launcher_killed = result.signal == 0 && !result.timed_out && result.failed_signal != 0;
  // ...after the rank had failed: ranks that died because the launcher did (killed, OOM) end later.
  if (launcher_killed && failure && failure->exit.exit_code != 0 && failure->exit.time <= result.failed_time) {
    return failure->exit.exit_code;
  }
  return result.exit_code;
}

std::string launcher_death_note(std::string_view launcher, const RunResult& result,
                                const std::optional<FirstFailure>& failure) {
  const int code = job_exit_code(result, failure);
  if (code == result.exit_code) {
    return "";
  }
  return std::string(launcher) + " itself was then killed by signal " + signal_label(result.failed_signal) +
         ": ezpz exits with rank " + std::to_string(failure->exit.rank) + "'s code, " + std::to_string(code);
}

std::string launcher_says(std::string_view output, std::string_view skip) {
  std::string first;
  for (const auto& raw : split(output, '\n')) {
    const auto line = std::string(trim(raw));
    const bool words = line.find_first_not_of("-=*# ") != std::string::npos;
    if (!words || (!skip.empty() && line.find(skip) != std::string::npos) || starts_with(line, "Type '") ||
        line.find("--help' for usage") != std::string::npos) {
      continue;
    }
    if (to_lower(line).find("error") != std::string::npos) {
      return line;
    }
    first = first.empty() ? line : first;
  }
  return first;
}

}  // namespace ezpz::core
