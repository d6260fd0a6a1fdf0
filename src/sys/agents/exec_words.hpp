// argv and envp for execve, made before fork (nothing is allocated in the child), and this
// process's own variables as the agents read them.
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

namespace ezpz::sys {

/// The variable `name` of this process's environment; "" when unset.
inline std::string env_or_empty(std::string_view name) {
  const char* v = std::getenv(std::string(name).c_str());
  return v == nullptr ? std::string() : std::string(v);
}

/// Pointers to `words`, then a null pointer (they live as long as `words`).
inline std::vector<char*> pointers(std::vector<std::string>& words) {
  std::vector<char*> out;
  for (auto& w : words) {
    out.push_back(w.data());
  }
  out.push_back(nullptr);
  return out;
}

/// This binary's path (as ps shows a relay started over SSH) and `args`: the words to exec this
/// binary again with.
inline std::vector<std::string> self_words(const std::vector<std::string>& args) {
  char path[4096] = {};
  const auto len = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  std::vector<std::string> words = {len > 0 ? std::string(path, static_cast<std::size_t>(len)) : "ezpz"};
  words.insert(words.end(), args.begin(), args.end());
  return words;
}

/// This process's environment plus `extra` ("NAME=value"), which replaces any of the same names.
inline std::vector<std::string> environment_plus(const std::vector<std::string>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const auto name = entry.substr(0, entry.find('=') + 1);
    bool replaced = false;
    for (const auto& x : extra) {
      replaced = replaced || x.rfind(name, 0) == 0;
    }
    if (!replaced) {
      out.push_back(entry);
    }
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

}  // namespace ezpz::sys
