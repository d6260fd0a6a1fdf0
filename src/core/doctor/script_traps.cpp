#include "core/doctor/script_traps.hpp"

#include <algorithm>

#include "core/base/strings.hpp"

namespace ezpz::core {
namespace {

/// The words of one simple command (split at blanks; quotes are not needed for what is looked at).
std::vector<std::string_view> words_of(std::string_view command) {
  std::vector<std::string_view> out;
  for (auto w : split(command, ' ')) {
    w = trim(w);
    if (!w.empty()) {
      out.push_back(w);
    }
  }
  return out;
}

/// The commands of a line: split at ';', '&&' and '||' (crudely: enough for `set` and `module`).
std::vector<std::string> commands_of(std::string_view line) {
  std::string text(line);
  for (const char* sep : {"&&", "||"}) {
    for (auto p = text.find(sep); p != std::string::npos; p = text.find(sep)) {
      text.replace(p, 2, ";");
    }
  }
  std::replace(text.begin(), text.end(), '\t', ' ');
  std::vector<std::string> out;
  for (auto c : split(text, ';')) {
    out.emplace_back(trim(c));
  }
  return out;
}

/// How `set` changes nounset: +1 on (-u, -eu, -o nounset), -1 off (+u, +o nounset), 0 neither.
int nounset_change(const std::vector<std::string_view>& w) {
  int change = 0;
  for (std::size_t i = 1; i < w.size(); ++i) {
    const bool on = w[i].front() == '-';
    if ((on || w[i].front() == '+') && w[i].size() > 1 && w[i][1] != '-') {
      if (w[i] == "-o" || w[i] == "+o") {
        if (i + 1 < w.size() && w[i + 1] == "nounset") {
          change = on ? 1 : -1;
        }
      } else if (w[i].find('u') != std::string_view::npos) {
        change = on ? 1 : -1;
      }
    }
  }
  return change;
}

bool sources(const std::vector<std::string_view>& w, std::string_view what) {
  return w.size() > 1 && (w[0] == "source" || w[0] == ".") && w[1].find(what) != std::string_view::npos;
}

/// A module command or a profile that runs Lmod's or the site's code.
bool loads_modules(const std::vector<std::string_view>& w) {
  return (!w.empty() && (w[0] == "module" || w[0] == "ml")) || sources(w, "/etc/profile") || sources(w, "lmod/init") ||
         sources(w, "modules/init") || sources(w, "/etc/bashrc");
}

bool fetches(std::string_view line) {
  const bool tool = line.find("curl ") != std::string_view::npos || line.find("wget ") != std::string_view::npos;
  return tool && (line.find("<(curl") != std::string_view::npos || line.find("<(wget") != std::string_view::npos ||
                  line.find("| bash") != std::string_view::npos || line.find("| sh") != std::string_view::npos ||
                  line.find("|bash") != std::string_view::npos || line.find("|sh") != std::string_view::npos);
}

}  // namespace

bool is_shell_script(std::string_view text) {
  if (!starts_with(text, "#!")) {
    return false;
  }
  const auto first = text.substr(0, text.find('\n'));
  const auto words = words_of(first.substr(2));
  return std::any_of(words.begin(), words.end(), [](std::string_view w) {
    const auto base = w.substr(w.rfind('/') == std::string_view::npos ? 0 : w.rfind('/') + 1);
    return base == "sh" || base == "bash" || base == "zsh" || base == "ksh";
  });
}

std::vector<ScriptTrap> script_traps(std::string_view script) {
  std::vector<ScriptTrap> out;
  const auto lines = split(script, '\n');
  const auto shebang =
      lines.empty() || !starts_with(lines[0], "#!") ? std::vector<std::string_view>{} : words_of(lines[0].substr(2));
  const bool login = std::any_of(shebang.begin(), shebang.end(), [](auto w) {
    return w == "--login" || (starts_with(w, "-") && !starts_with(w, "--") && w.find('l') != std::string_view::npos);
  });
  int nounset_line =
      std::any_of(
          shebang.begin(), shebang.end(),
          [](auto w) { return starts_with(w, "-") && !starts_with(w, "--") && w.find('u') != std::string_view::npos; })
          ? 1
          : 0;
  bool profile_sourced = login;
  bool said_nounset = false;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto line = trim(lines[i]);
    const int n = static_cast<int>(i) + 1;
    if (line.empty() || line.front() == '#') {
      continue;
    }
    if (fetches(line)) {
      out.push_back({n,
                     "line " + std::to_string(n) +
                         " fetches from the network: compute nodes have no outbound network, so the job hangs "
                         "for minutes, then runs unconfigured",
                     "fetch it on the login node before you submit, and source the local copy"});
    }
    for (const auto& command : commands_of(line)) {
      const auto w = words_of(command);
      if (!w.empty() && w[0] == "set") {
        const int change = nounset_change(w);
        nounset_line = change > 0 ? n : change < 0 ? 0 : nounset_line;
      } else if (loads_modules(w)) {
        if (nounset_line != 0 && !said_nounset) {
          said_nounset = true;
          out.push_back({n,
                         "set -u (line " + std::to_string(nounset_line) + ") is on when line " + std::to_string(n) +
                             " loads modules: /etc/profile and Lmod abort under it, and the job ends at once "
                             "with empty logs",
                         "move set -u after the module lines, or drop it (set -eo pipefail is safe)"});
        }
        if (sources(w, "lmod/init") && !profile_sourced) {
          out.push_back({n,
                         "line " + std::to_string(n) +
                             " sources Lmod's init in a non-login shell: MODULEPATH stays empty and every "
                             "module load does nothing",
                         "start the script with #!/bin/bash -l, or source /etc/profile instead"});
        }
        profile_sourced = profile_sourced || sources(w, "/etc/profile");
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.line < b.line; });
  return out;
}

}  // namespace ezpz::core
