// Declarations only, for c10d's ProcessGroupGloo.hpp where torch ships no gloo headers
// (src/torch/gloo_decls/README.md).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace gloo::rendezvous {

/// The key-value store gloo rendezvouses through: the four functions c10d's GlooStore overrides.
class Store {
 public:
  static constexpr std::chrono::milliseconds kDefaultTimeout{30000};  ///< named by torch 1.x's GlooStore
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::vector<char>& data) = 0;
  virtual std::vector<char> get(const std::string& key) = 0;
  virtual void wait(const std::vector<std::string>& keys) = 0;
  virtual void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) = 0;
};

}  // namespace gloo::rendezvous
