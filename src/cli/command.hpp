// What every subcommand provides. One .hpp/.cpp pair per subcommand; the table
// in registry.cpp lists them.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/env.hpp"
#include "core/launch/rank_channel.hpp"
#include "core/ports/probe.hpp"
#include "core/ports/process.hpp"
#include "core/reach/transport.hpp"
#include "core/yeet/transfer.hpp"

namespace CLI {
class App;
}

namespace ezpz::cli {

class Terminal;

/// The ports a subcommand may use; its row in the command table says which (`needs`).
enum Need : unsigned {
  kNoPorts = 0,
  kProbe = 1U << 0,         ///< core::SystemProbe: files and facts of this node
  kNodeQuery = 1U << 1,     ///< core::NodeQuery: ask every node (doctor --nodes)
  kJobs = 1U << 2,          ///< core::JobControl: run children and jobs here
  kProcesses = 1U << 3,     ///< core::ProcessTable: find and signal this node's processes
  kNodeCommands = 1U << 4,  ///< core::NodeCommands: run ezpz on every node
  kTrees = 1U << 5,         ///< core::Trees: inspect, copy, sync, patch trees
  kStaging = 1U << 6,       ///< core::Staging: work beside a destination, atomic install
  kArchives = 1U << 7,      ///< core::Archives: pack, checksum, extract
  kManifests = 1U << 8,     ///< core::Manifests: incremental copies
  kBroadcast = 1U << 9,     ///< core::Broadcaster: relay trees to other nodes
  kTransport = 1U << 10,    ///< core::Transport: the local half of a command started on another node
  kRanks = 1U << 11,        ///< core::RankChannels: the ranks' output and ends beside the launcher
};

/// The real system (main) or fakes (tests); a null port is one this process does not offer.
struct Ports {
  const core::SystemProbe* probe = nullptr;
  const core::NodeQuery* node_query = nullptr;
  core::JobControl* jobs = nullptr;
  core::ProcessTable* processes = nullptr;
  core::NodeCommands* node_commands = nullptr;
  core::Trees* trees = nullptr;
  core::Staging* staging = nullptr;
  core::Archives* archives = nullptr;
  core::Manifests* manifests = nullptr;
  core::Broadcaster* broadcaster = nullptr;
  core::Transport* transport = nullptr;
  core::RankChannels* ranks = nullptr;
};

/// What a subcommand's run gets: the environment, the terminal, and the ports its row names.
/// Asking for a port the row does not name is an internal error (the row is wrong).
class Context {
 public:
  Context(const core::Env& env_in, Terminal& term_in, const Ports& ports, unsigned needs, const CLI::App& root_in)
      : env(env_in), term(term_in), root(root_in), ports_(ports), needs_(needs) {}
  const core::Env& env;
  Terminal& term;
  const CLI::App& root;  ///< the whole CLI tree (help and completions walk it)

  [[nodiscard]] const core::SystemProbe& probe() const { return need(ports_.probe, kProbe, "probe"); }
  [[nodiscard]] const core::NodeQuery& node_query() const { return need(ports_.node_query, kNodeQuery, "node_query"); }
  [[nodiscard]] core::JobControl& jobs() const { return need(ports_.jobs, kJobs, "jobs"); }
  [[nodiscard]] core::ProcessTable& processes() const { return need(ports_.processes, kProcesses, "processes"); }
  [[nodiscard]] core::NodeCommands& node_commands() const {
    return need(ports_.node_commands, kNodeCommands, "node_commands");
  }
  [[nodiscard]] core::Trees& trees() const { return need(ports_.trees, kTrees, "trees"); }
  [[nodiscard]] core::Staging& staging() const { return need(ports_.staging, kStaging, "staging"); }
  [[nodiscard]] core::Archives& archives() const { return need(ports_.archives, kArchives, "archives"); }
  [[nodiscard]] core::Manifests& manifests() const { return need(ports_.manifests, kManifests, "manifests"); }
  [[nodiscard]] core::Broadcaster& broadcaster() const { return need(ports_.broadcaster, kBroadcast, "broadcaster"); }
  [[nodiscard]] core::Transport& transport() const { return need(ports_.transport, kTransport, "transport"); }
  [[nodiscard]] core::RankChannels& ranks() const { return need(ports_.ranks, kRanks, "ranks"); }

 private:
  template <typename T>
  T& need(T* port, Need which, const char* name) const {
    if ((needs_ & which) == 0 || port == nullptr) {
      throw std::logic_error(std::string("the command table row of this command does not name the port ") + name);
    }
    return *port;
  }
  Ports ports_;
  unsigned needs_;
};

class Command {
 public:
  virtual ~Command() = default;
  /// Register this subcommand's options on its CLI11 app.
  virtual void add_cli(CLI::App& app) = 0;
  /// Run after parsing; returns the process exit code.
  virtual int run(Context& ctx) = 0;
  /// Rewrite the tokens between the subcommand name and "--" before CLI11 sees them (launch maps
  /// ezpz's single-dash aliases such as -np and keeps the launcher's flags aside). Default: none.
  virtual void normalize(std::vector<std::string>& /*tokens*/, bool /*had_separator*/) {}
  /// ezpz's global flags normalize took out of the command's tokens (launch's -v before its command).
  [[nodiscard]] virtual std::vector<std::string> take_globals() { return {}; }
  /// Whether a command after "--" belongs to this subcommand.
  [[nodiscard]] virtual bool takes_trailing_command() const { return false; }
  // By value: the commands that take one keep it (moved in).
  virtual void set_trailing_command(
      std::vector<std::string> /*command*/,  // NOLINT(performance-unnecessary-value-param)
      bool /*had_separator*/) {}
  /// A raw row: run on `args` (after the mode's name) before any parsing; nullopt falls back
  /// to the parsed path.
  virtual std::optional<int> run_raw(Context& /*ctx*/, const std::vector<std::string>& /*args*/) {
    return std::nullopt;
  }
};

struct CommandInfo {
  std::string_view name;
  std::string_view help;
  std::unique_ptr<Command> (*make)();
  unsigned needs = kNoPorts;  ///< the ports its run uses (Need bits)
  bool hidden = false;        ///< internal: not in help or completions
  bool raw = false;           ///< started by ezpz itself with fixed argv: run_raw before the CLI tree is built
};

/// The row named `name`, if any.
[[nodiscard]] const CommandInfo* find_command(std::string_view name);

/// Every registered subcommand, in help order.
[[nodiscard]] const std::vector<CommandInfo>& command_table();

}  // namespace ezpz::cli
