// Reading fields of JSON that other processes send (relay result lines, manifests, delta headers):
// a missing field keeps its default, a field of the wrong type or range is reported, and nothing
// throws (nlohmann's value() throws on a type mismatch and converts floats to integers with
// undefined behaviour when they do not fit). Private to core's .cpp files: it includes nlohmann.
#pragma once

#include <cmath>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

namespace ezpz::core::json_fields {

/// Set `out` from `j[key]`: true when the key is absent (out unchanged) or holds a value of
/// out's type that fits; false when it holds anything else.
inline bool get(const nlohmann::json& j, const char* key, std::string& out) {
  auto it = j.find(key);
  if (it == j.end()) {
    return true;
  }
  if (!it->is_string()) {
    return false;
  }
  out = it->get<std::string>();
  return true;
}

inline bool get(const nlohmann::json& j, const char* key, bool& out) {
  auto it = j.find(key);
  if (it == j.end()) {
    return true;
  }
  if (!it->is_boolean()) {
    return false;
  }
  out = it->get<bool>();
  return true;
}

inline bool get(const nlohmann::json& j, const char* key, double& out) {
  auto it = j.find(key);
  if (it == j.end()) {
    return true;
  }
  if (!it->is_number() || !std::isfinite(it->get<double>())) {
    return false;
  }
  out = it->get<double>();
  return true;
}

/// Whole numbers only (no floats) that fit in Int.
template <typename Int>
bool get_integer(const nlohmann::json& j, const char* key, Int& out) {
  auto it = j.find(key);
  if (it == j.end()) {
    return true;
  }
  constexpr auto hi = static_cast<unsigned long long>(std::numeric_limits<Int>::max());
  constexpr auto lo = static_cast<long long>(std::numeric_limits<Int>::min());
  if (it->is_number_unsigned()) {
    const auto v = it->get<unsigned long long>();
    if (v > hi) {
      return false;
    }
    out = static_cast<Int>(v);
    return true;
  }
  if (it->is_number_integer()) {
    const auto v = it->get<long long>();
    if (v < lo || (v > 0 && static_cast<unsigned long long>(v) > hi)) {
      return false;
    }
    out = static_cast<Int>(v);
    return true;
  }
  return false;
}

inline bool get(const nlohmann::json& j, const char* key, unsigned long long& out) {
  return get_integer(j, key, out);
}
inline bool get(const nlohmann::json& j, const char* key, long long& out) {
  return get_integer(j, key, out);
}
inline bool get(const nlohmann::json& j, const char* key, unsigned& out) {
  return get_integer(j, key, out);
}
inline bool get(const nlohmann::json& j, const char* key, int& out) {
  return get_integer(j, key, out);
}

}  // namespace ezpz::core::json_fields
