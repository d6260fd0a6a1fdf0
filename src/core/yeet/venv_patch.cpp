#include "core/yeet/venv_patch.hpp"

#include <algorithm>
#include <array>

#include "core/base/strings.hpp"

namespace ezpz::core {
namespace {

bool is_path_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.' || c == '+' || c == '@' || c == '~';
}

}  // namespace

std::optional<std::string> replace_prefix(std::string_view text, std::string_view old_prefix,
                                          std::string_view new_prefix) {
  if (old_prefix.empty()) {
    return std::nullopt;
  }
  std::string out;
  bool changed = false;
  std::size_t pos = 0;
  while (true) {
    auto hit = text.find(old_prefix, pos);
    if (hit == std::string_view::npos) {
      break;
    }
    auto end = hit + old_prefix.size();
    if (end < text.size() && is_path_char(text[end])) {
      out.append(text.substr(pos, end - pos));
      pos = end;
      continue;
    }
    out.append(text.substr(pos, hit - pos));
    out.append(new_prefix);
    pos = end;
    changed = true;
  }
  if (!changed) {
    return std::nullopt;
  }
  out.append(text.substr(pos));
  return out;
}

/// One POSIX shell word at the start of `s`: '...' literal, "..." with \ escapes, bare chars.
static std::string shell_word(std::string_view s, std::size_t* consumed = nullptr) {
  std::string out;
  std::size_t i = 0;
  while (i < s.size() && s[i] != ' ' && s[i] != '\t' && s[i] != ';' && s[i] != '#') {
    const char c = s[i];
    if (c == '\'') {
      auto close = s.find('\'', i + 1);
      out.append(s.substr(i + 1, close == std::string_view::npos ? std::string_view::npos : close - i - 1));
      i = close == std::string_view::npos ? s.size() : close + 1;
    } else if (c == '"') {
      ++i;
      while (i < s.size() && s[i] != '"') {
        if (s[i] == '\\' && i + 1 < s.size()) {
          ++i;
        }
        out += s[i++];
      }
      ++i;
    } else if (c == '\\' && i + 1 < s.size()) {
      out += s[i + 1];
      i += 2;
    } else {
      out += c;
      ++i;
    }
  }
  if (consumed != nullptr) {
    *consumed = std::min(i, s.size());
  }
  return out;
}

std::optional<std::string> activate_prefix(std::string_view activate_text) {
  for (auto line : split(activate_text, '\n')) {
    line = trim(line);
    if (!starts_with(line, "VIRTUAL_ENV=")) {
      continue;
    }
    auto value = shell_word(line.substr(12));
    if (!value.empty() && value.front() == '/') {
      return value;
    }
  }
  return std::nullopt;
}

std::string shell_single_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    out += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);
  }
  return out + "'";
}

std::optional<std::string> rewrite_activate(std::string_view text, const std::vector<std::string>& old_prefixes,
                                            std::string_view new_prefix) {
  static const std::array<std::string_view, 3> assignments = {"VIRTUAL_ENV=", "setenv VIRTUAL_ENV ",
                                                              "set -gx VIRTUAL_ENV "};
  std::string out;
  bool changed = false;
  for (auto line : split(text, '\n')) {
    std::string current(line);
    const auto indent = line.find_first_not_of(" \t");
    const auto body = indent == std::string_view::npos ? std::string_view() : line.substr(indent);
    bool done = false;
    for (auto head : assignments) {
      if (!starts_with(body, head)) {
        continue;
      }
      std::size_t used = 0;
      const auto word = shell_word(body.substr(head.size()), &used);
      if (std::find(old_prefixes.begin(), old_prefixes.end(), word) != old_prefixes.end()) {
        current = std::string(line.substr(0, indent)) + std::string(head) + shell_single_quote(new_prefix) +
                  std::string(body.substr(head.size() + used));
        changed = done = true;
      }
      break;
    }
    if (!done) {
      for (const auto& old : old_prefixes) {
        if (auto next = replace_prefix(current, old, new_prefix)) {
          current = std::move(*next);
          changed = true;
        }
      }
    }
    out += current;
    out += '\n';
  }
  if (!changed) {
    return std::nullopt;
  }
  out.pop_back();  // split() saw one more line than there were newlines
  return out;
}

bool is_venv_text_file(std::string_view name) {
  static const std::array<std::string_view, 7> names = {"bin/activate",    "bin/activate.csh", "bin/activate.fish",
                                                        "bin/activate.nu", "bin/activate.ps1", "bin/activate.bat",
                                                        "pyvenv.cfg"};
  const auto lower = to_lower(name);
  for (auto n : names) {
    if (lower == n) {
      return true;
    }
  }
  return false;
}

bool shebang_names(std::string_view text, std::string_view old_prefix) {
  if (!starts_with(text, "#!")) {
    return false;
  }
  const auto eol = text.find('\n');
  const auto first = text.substr(0, eol);
  if (replace_prefix(first, old_prefix, "").has_value()) {
    return true;
  }
  // pip's form for paths a #! line cannot hold: "#!/bin/sh", then an exec line naming the prefix.
  if (trim(first) != "#!/bin/sh" || eol == std::string_view::npos) {
    return false;
  }
  const auto second = text.substr(eol + 1, text.find('\n', eol + 1) - eol - 1);
  return starts_with(second, "'''exec'") && replace_prefix(second, old_prefix, "").has_value();
}

std::optional<std::string> relink_target(std::string_view target, std::string_view old_prefix,
                                         std::string_view new_prefix) {
  if (target == old_prefix) {
    return std::string(new_prefix);
  }
  if (starts_with(target, std::string(old_prefix) + "/")) {
    return std::string(new_prefix) + std::string(target.substr(old_prefix.size()));
  }
  return std::nullopt;
}

bool looks_binary(std::string_view content) {
  return content.find('\0') != std::string_view::npos;
}

}  // namespace ezpz::core

namespace ezpz::core {

std::optional<std::string> portable_shebang(std::string_view script, std::string_view prefix) {
  if (!starts_with(script, "#!")) {
    return std::nullopt;
  }
  const auto eol = script.find('\n');
  const std::string_view line = script.substr(2, eol == std::string_view::npos ? std::string_view::npos : eol - 2);
  if (!starts_with(line, prefix)) {
    return std::nullopt;
  }
  const bool has_space = std::string_view(prefix).find_first_of(" \t") != std::string_view::npos;
  if (!has_space && line.size() + 2 <= 127) {
    return std::nullopt;
  }
  // interpreter = prefix + the rest of its path; what follows a space after that are arguments.
  const auto rest = line.substr(prefix.size());
  const auto space = rest.find(' ');
  const std::string interpreter = std::string(prefix) + std::string(rest.substr(0, space));
  const std::string args = space == std::string_view::npos ? "" : std::string(rest.substr(space));
  std::string quoted;
  if (interpreter.find_first_of("\"$`\\") == std::string::npos) {
    quoted = "\"" + interpreter + "\"";
  } else {
    quoted = "'";
    for (char c : interpreter) {
      quoted += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);
    }
    quoted += "'";
  }
  std::string out = "#!/bin/sh\n'''exec' " + quoted + args + " \"$0\" \"$@\"\n' '''\n";
  if (eol != std::string_view::npos) {
    out.append(script.substr(eol + 1));
  }
  return out;
}

}  // namespace ezpz::core
