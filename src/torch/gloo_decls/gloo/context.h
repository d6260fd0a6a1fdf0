// Declarations only, for c10d's ProcessGroupGloo.hpp where torch ships no gloo headers
// (src/torch/gloo_decls/README.md).
#pragma once

#include <chrono>

namespace gloo {

/// A set of connections to a group's peers (named by ProcessGroupGloo::setTimeout's inline body).
class Context {
 public:
  void setTimeout(std::chrono::milliseconds timeout);
};

}  // namespace gloo
