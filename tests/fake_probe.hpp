// An in-memory SystemProbe for unit tests: files, directories, programs on PATH.
#pragma once

#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

#include "core/job/machine.hpp"
#include "core/ports/probe.hpp"
#include "core/reach/transport.hpp"

namespace ezpz::test {

class FakeProbe final : public core::SystemProbe, public core::NodeQuery {
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
  std::map<std::string, double> lookup_seconds;  ///< how long a name takes to look up (else 0)
  mutable std::vector<std::string> looked_up;    ///< every name looked up, in order
  [[nodiscard]] core::Lookup look_up(const std::string& host, double timeout_s) const override {
    looked_up.push_back(host);
    const auto it = lookup_seconds.find(host);
    const double took = it == lookup_seconds.end() ? 0 : it->second;
    if (took > timeout_s) {
      return {false, timeout_s, true};
    }
    return {resolvable.count(host) != 0, took, false};
  }
  [[nodiscard]] Expected<void> write_file(const std::string& path, const std::string& text) const override {
    if (writes_fail) {
      return failure("cannot create " + path + ": Permission denied");
    }
    written[path] = text;
    return {};
  }
  mutable std::set<std::string> removed_dirs;  ///< every remove_empty_dir path
  bool remove_empty_dir(const std::string& path) const override {
    removed_dirs.insert(path);
    return made_dirs.erase(path) != 0;
  }
  mutable std::set<std::string> made_dirs;  ///< every make_dirs path
  [[nodiscard]] Expected<void> make_dirs(const std::string& path) const override {
    if (writes_fail) {
      return failure("cannot create " + path + ": Permission denied");
    }
    made_dirs.insert(path);
    return {};
  }
  [[nodiscard]] Expected<std::string> make_private_dir(const std::string& prefix) const override {
    EZPZ_TRY(make_dirs(prefix + ".000001"));
    return prefix + ".000001";
  }

  mutable std::map<std::string, std::string> pointed;  ///< every point_link: path -> target
  [[nodiscard]] Expected<void> point_link(const std::string& path, const std::string& target) const override {
    pointed[path] = target;
    return {};
  }

  /// Programs' outputs by their whole command line ("mpiexec --version"); others are not found.
  std::map<std::string, core::ProgramOutput> outputs;
  mutable std::vector<std::vector<std::string>> ran;  ///< every run_program argv
  [[nodiscard]] Expected<core::ProgramOutput> run_program(const std::vector<std::string>& argv,
                                                          const std::vector<std::pair<std::string, std::string>>&,
                                                          const std::vector<std::string>&, double) const override {
    ran.push_back(argv);
    std::string line;
    for (const auto& a : argv) {
      line += (line.empty() ? "" : " ") + a;
    }
    auto it = outputs.find(line);
    if (it == outputs.end()) {
      return Error{ExitCode::not_found, argv.front() + " is not on PATH"};
    }
    return it->second;
  }
  std::map<std::string, core::DiskSpace> space;          ///< path -> its filesystem's space
  std::map<std::string, unsigned long long> tree_sizes;  ///< path -> bytes under it
  std::map<std::string, core::ResourceLimit> limits;     ///< "nofile", "memlock"
  [[nodiscard]] std::optional<core::DiskSpace> disk_space(const std::string& path) const override {
    auto it = space.find(path);
    return it == space.end() ? std::nullopt : std::optional(it->second);
  }
  [[nodiscard]] std::optional<unsigned long long> tree_bytes(const std::string& path) const override {
    auto it = tree_sizes.find(path);
    return it == tree_sizes.end() ? std::nullopt : std::optional(it->second);
  }
  std::map<std::string, core::FileStamp> stamps;     ///< path -> its stamp (others do not exist)
  std::map<std::string, core::SocketState> sockets;  ///< path -> what is there (others absent)
  [[nodiscard]] std::optional<core::FileStamp> file_stamp(const std::string& path) const override {
    auto it = stamps.find(path);
    return it == stamps.end() ? std::nullopt : std::optional(it->second);
  }
  [[nodiscard]] core::SocketState unix_socket(const std::string& path) const override {
    auto it = sockets.find(path);
    return it == sockets.end() ? core::SocketState::absent : it->second;
  }
  [[nodiscard]] core::ResourceLimit resource_limit(const std::string& name) const override {
    auto it = limits.find(name);
    return it == limits.end() ? core::ResourceLimit{} : it->second;
  }
  [[nodiscard]] std::pair<std::string, unsigned long long> self_digest() const override { return {}; }
  [[nodiscard]] std::string file_digest(const std::string& /*path*/) const override { return {}; }
  [[nodiscard]] core::Signature check_signature(const std::string& /*file*/, const std::string& /*signature_file*/,
                                                const std::string& /*key_hex*/) const override {
    return core::Signature::unreadable;
  }
  /// Canned answers by host; hosts not listed are not ready. `asked` records each command.
  std::map<std::string, core::NodeReply> replies;
  mutable std::vector<std::vector<std::string>> asked;
  [[nodiscard]] std::vector<core::NodeReply> ask_nodes(const std::vector<std::string>& hosts,
                                                       const core::RemoteCommand& command, const core::ReachSpec&, int,
                                                       const std::function<void()>& started) const override {
    std::vector<core::NodeReply> out;
    for (const auto& h : hosts) {
      asked.push_back(command.args);
      auto it = replies.find(h);
      core::NodeReply r = it == replies.end() ? core::NodeReply{} : it->second;
      r.host = h;
      out.push_back(r);
    }
    if (started) {
      started();
    }
    return out;
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
