// An in-memory SystemProbe for unit tests: files, directories, programs on PATH.
#pragma once

#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

#include "core/machine.hpp"
#include "core/probe.hpp"

namespace ezpz::test {

class FakeProbe final : public core::SystemProbe {
 public:
  std::map<std::string, std::string> files;              ///< path -> text
  std::map<std::string, std::vector<std::string>> dirs;  ///< path -> entry names
  std::map<std::string, std::string> programs;           ///< name -> absolute path
  std::map<std::string, std::string> links;              ///< path -> resolved path
  int gpus = 0;

  [[nodiscard]] Expected<std::string> read_file(const std::string& path) const override {
    auto it = files.find(path);
    if (it == files.end()) {
      return failure("cannot read " + path + ": No such file or directory");
    }
    return it->second;
  }
  [[nodiscard]] bool is_file(const std::string& path) const override { return files.count(path) != 0; }
  [[nodiscard]] std::vector<std::string> list_dir(const std::string& path) const override {
    auto it = dirs.find(path);
    return it == dirs.end() ? std::vector<std::string>{} : it->second;
  }
  [[nodiscard]] std::optional<std::string> find_program(const std::string& name) const override {
    auto it = programs.find(name);
    return it == programs.end() ? std::nullopt : std::optional(it->second);
  }
  [[nodiscard]] std::string real_path(const std::string& path) const override {
    auto it = links.find(path);
    return it == links.end() ? path : it->second;
  }
  [[nodiscard]] int count_gpu_devices() const override { return gpus; }
  std::set<std::string> resolvable;                    ///< names that resolve
  mutable std::map<std::string, std::string> written;  ///< path -> text written
  bool writes_fail = false;
  [[nodiscard]] bool resolves(const std::string& host) const override { return resolvable.count(host) != 0; }
  [[nodiscard]] Expected<void> write_file(const std::string& path, const std::string& text) const override {
    if (writes_fail) {
      return failure("cannot create " + path + ": Permission denied");
    }
    written[path] = text;
    return {};
  }
};

inline core::Env make_env(std::map<std::string, std::string, std::less<>> vars, std::string hostname = "laptop",
                          unsigned uid = 1000) {
  core::Env env;
  env.vars = std::move(vars);
  env.hostname = std::move(hostname);
  env.uid = uid;
  return env;
}

/// The built-in machine profiles (a test fails if they do not parse).
inline core::MachineSet builtin_machines() {
  auto set = core::MachineSet::builtin();
  REQUIRE(set);
  return *set;
}

}  // namespace ezpz::test
