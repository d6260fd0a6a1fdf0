#include "core/job/kill.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <csignal>
#include <utility>

#include "core/base/strings.hpp"

namespace ezpz::core {
namespace {
constexpr std::array<std::pair<std::string_view, int>, 7> kSignals = {{{"TERM", SIGTERM},
                                                                       {"KILL", SIGKILL},
                                                                       {"INT", SIGINT},
                                                                       {"HUP", SIGHUP},
                                                                       {"QUIT", SIGQUIT},
                                                                       {"USR1", SIGUSR1},
                                                                       {"USR2", SIGUSR2}}};
}  // namespace

std::vector<std::string> signal_names() {
  std::vector<std::string> names;
  for (const auto& [n, sig] : kSignals) {
    names.emplace_back(n);
  }
  return names;
}

std::optional<int> signal_from_string(std::string_view s) {
  const std::string upper = to_upper(s);
  std::string_view name = upper;
  if (name.substr(0, 3) == "SIG") {
    name.remove_prefix(3);
  }
  for (const auto& [n, sig] : kSignals) {
    if (name == n) {
      return sig;
    }
  }
  int number = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), number);
  if (ec == std::errc() && p == s.data() + s.size()) {
    for (const auto& [n, sig] : kSignals) {
      if (sig == number) {
        return sig;
      }
    }
  }
  return std::nullopt;
}

std::string signal_name(int sig) {
  for (const auto& [n, s] : kSignals) {
    if (s == sig) {
      return "SIG" + std::string(n);
    }
  }
  return std::to_string(sig);
}

std::vector<ProcessInfo> select_kill_targets(const std::vector<ProcessInfo>& processes, std::string_view pattern,
                                             const std::vector<int>& protect, unsigned uid, bool all_users) {
  std::vector<ProcessInfo> out;
  for (const auto& p : processes) {
    if (p.job_id.empty() || std::find(protect.begin(), protect.end(), p.pid) != protect.end() ||
        (p.uid != uid && !all_users)) {
      continue;
    }
    if (pattern.empty() || p.job_id.find(pattern) != std::string::npos ||
        p.cmdline.find(pattern) != std::string::npos) {
      out.push_back(p);
    }
  }
  return out;
}

}  // namespace ezpz::core
