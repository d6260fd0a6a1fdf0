// Starting programs for real.
#pragma once

#include "core/process.hpp"

namespace ezpz::sys {

class PosixProcessControl final : public core::ProcessControl {
 public:
  [[nodiscard]] Error exec_replace(const std::vector<std::string>& argv,
                                   const std::vector<std::pair<std::string, std::string>>& env) override;
};

}  // namespace ezpz::sys
