// Used only where torch ships c10d's ProcessGroupGloo.hpp but not the gloo headers it includes (a pip
// wheel; Debian's libgloo-dev has the real ones): src/torch/CMakeLists.txt then puts this folder on the
// include path. libezpz_torch passes gloo's objects around only by shared_ptr and calls no gloo code, so
// declaring the few names that header mentions is enough: sizes and layouts are never taken from here.
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
