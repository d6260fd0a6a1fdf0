// The port through which commands start programs. sys/ implements it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/expected.hpp"

namespace ezpz::core {

class ProcessControl {
 public:
  virtual ~ProcessControl() = default;
  /// Replace this process with argv (PATH lookup), `env` added to the environment.
  /// Returns only on failure (127 not found, 126 cannot execute).
  [[nodiscard]] virtual Error exec_replace(const std::vector<std::string>& argv,
                                           const std::vector<std::pair<std::string, std::string>>& env) = 0;
};

}  // namespace ezpz::core
