// SystemProbe on the real filesystem.
#pragma once

#include <string>

#include "core/ports/probe.hpp"

namespace ezpz::sys {

class PosixProbe final : public core::SystemProbe {
 public:
  /// `path_env` is the PATH to search (from the Env snapshot).
  explicit PosixProbe(std::string path_env) : path_env_(std::move(path_env)) {}

  [[nodiscard]] Expected<std::string> read_file(const std::string& path) const override;
  [[nodiscard]] bool is_file(const std::string& path) const override;
  [[nodiscard]] std::vector<std::string> list_dir(const std::string& path) const override;
  [[nodiscard]] std::optional<std::string> find_program(const std::string& name) const override;
  [[nodiscard]] std::string real_path(const std::string& path) const override;
  [[nodiscard]] int count_gpu_devices() const override;
  [[nodiscard]] core::Lookup look_up(const std::string& host, double timeout_s) const override;
  [[nodiscard]] Expected<void> write_file(const std::string& path, const std::string& text) const override;
  [[nodiscard]] Expected<void> make_dirs(const std::string& path) const override;
  [[nodiscard]] Expected<std::string> make_private_dir(const std::string& prefix) const override;
  [[nodiscard]] Expected<void> point_link(const std::string& path, const std::string& target) const override;
  bool remove_empty_dir(const std::string& path) const override;
  [[nodiscard]] Expected<core::ProgramOutput> run_program(const std::vector<std::string>& argv,
                                                          const std::vector<std::pair<std::string, std::string>>& set,
                                                          const std::vector<std::string>& unset,
                                                          double timeout_s) const override;
  [[nodiscard]] std::optional<core::DiskSpace> disk_space(const std::string& path) const override;
  [[nodiscard]] std::optional<unsigned long long> tree_bytes(const std::string& path) const override;
  [[nodiscard]] std::optional<core::FileStamp> file_stamp(const std::string& path) const override;
  [[nodiscard]] Expected<void> replace_executable(const std::string& fresh, const std::string& target,
                                                  const std::string& keep_as) const override;
  [[nodiscard]] core::ResourceLimit resource_limit(const std::string& name) const override;
  [[nodiscard]] core::SocketState unix_socket(const std::string& path) const override;
  /// In os/self_digest.cpp.
  [[nodiscard]] std::pair<std::string, unsigned long long> self_digest() const override;
  [[nodiscard]] std::string file_digest(const std::string& path) const override;
  /// In os/signature.cpp (libcrypto).
  [[nodiscard]] core::Signature check_signature(const std::string& file, const std::string& signature_file,
                                                const std::string& key_hex) const override;

 private:
  std::string path_env_;
};

}  // namespace ezpz::sys
