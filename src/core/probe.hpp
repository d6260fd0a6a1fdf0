// The port through which core asks about the machine: files, directories,
// programs on PATH, GPU devices, name resolution; and writes small files (job
// records). sys/ implements it; tests use a fake.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/expected.hpp"

namespace ezpz::core {

class SystemProbe {
 public:
  virtual ~SystemProbe() = default;

  /// Whole file text; an Error naming the path when it cannot be read.
  [[nodiscard]] virtual Expected<std::string> read_file(const std::string& path) const = 0;
  [[nodiscard]] virtual bool is_file(const std::string& path) const = 0;
  /// Names in a directory (not paths); empty when it does not exist.
  [[nodiscard]] virtual std::vector<std::string> list_dir(const std::string& path) const = 0;
  /// Absolute path of an executable found on PATH.
  [[nodiscard]] virtual std::optional<std::string> find_program(const std::string& name) const = 0;
  /// Path with symlinks resolved (the input when it cannot be resolved).
  [[nodiscard]] virtual std::string real_path(const std::string& path) const = 0;
  /// Number of GPU device files (/dev/nvidiaN, else /dev/dri/renderD*).
  [[nodiscard]] virtual int count_gpu_devices() const = 0;
  /// Whether a host name resolves to an address (used for high-speed-network names).
  [[nodiscard]] virtual bool resolves(const std::string& host) const = 0;
  /// Write `text` to `path` (parents created), via a temporary file and rename.
  [[nodiscard]] virtual Expected<void> write_file(const std::string& path, const std::string& text) const = 0;
};

}  // namespace ezpz::core
