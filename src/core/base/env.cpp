#include "core/base/env.hpp"

namespace ezpz::core {

std::optional<std::string> Env::get(std::string_view name) const {
  auto it = vars.find(name);
  if (it == vars.end() || it->second.empty()) {
    return std::nullopt;
  }
  return it->second;
}

std::optional<std::pair<std::string, std::string>> Env::first_of(std::initializer_list<std::string_view> names) const {
  for (auto name : names) {
    if (auto value = get(name)) {
      return std::make_pair(std::string(name), *value);
    }
  }
  return std::nullopt;
}

}  // namespace ezpz::core
