#include "core/base/shell.hpp"

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

std::vector<std::string> split_command(const std::string& command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else if (c == '\\' && quote == '"' && i + 1 < command.size()) {
        word += command[++i];
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < command.size()) {
      word += command[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) {
        words.push_back(word);
        word.clear();
        in_word = false;
      }
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) {
    words.push_back(word);
  }
  return words;
}

}  // namespace ezpz::core
