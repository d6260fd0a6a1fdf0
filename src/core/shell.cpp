#include "core/shell.hpp"

#include <algorithm>

namespace ezpz::core {

std::string shell_quote(std::string_view s) {
  const auto safe = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_-+=:,./@%").find(c) != std::string_view::npos;
  };
  if (!s.empty() && std::all_of(s.begin(), s.end(), safe) && s.front() != '=') {
    return std::string(s);
  }
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& word : argv) {
    if (!out.empty()) {
      out += ' ';
    }
    out += shell_quote(word);
  }
  return out;
}

std::string shell_command_line(const std::vector<std::pair<std::string, std::string>>& env,
                               const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& [name, value] : env) {
    out += name + "=" + shell_quote(value) + " ";
  }
  return out + shell_join(argv);
}

}  // namespace ezpz::core
