// What is at a yeet destination before it is replaced (core::check_replaceable decides).
#pragma once

#include <string>

#include "core/yeet/plan.hpp"

namespace ezpz::sys {

/// What `path` is (never followed if a link), whether yeet made it, and whether this user may
/// move it aside.
core::DestinationFacts inspect_destination(const std::string& path);

}  // namespace ezpz::sys
