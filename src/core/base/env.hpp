// The environment snapshot: built once in main (sys/), passed by value below.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace ezpz::core {

struct Env {
  std::map<std::string, std::string, std::less<>> vars;  ///< the process environment
  std::string hostname;                                  ///< gethostname(), as the OS reports it
  unsigned uid = 0;
  int pid = 0;
  std::string self_exe;  ///< absolute path of the running ezpz binary (the per-rank shim)

  /// The value of NAME, or nullopt when it is unset or empty.
  [[nodiscard]] std::optional<std::string> get(std::string_view name) const;
  [[nodiscard]] bool has(std::string_view name) const { return get(name).has_value(); }
  /// First set (non-empty) variable among NAMES, with its name.
  [[nodiscard]] std::optional<std::pair<std::string, std::string>> first_of(
      std::initializer_list<std::string_view> names) const;
};

}  // namespace ezpz::core
