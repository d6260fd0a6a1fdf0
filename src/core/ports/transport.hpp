// The port for how a command is started on another node: today the built-in libssh client or
// the user's ssh command (sys/remote); the broadcast (sys/broadcast), doctor --nodes and
// kill --all-nodes (sys/nodes) reach other nodes only through it.
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "core/yeet/relay_tree.hpp"

namespace ezpz::core {

/// A command running on another node: write its stdin to `in`, read its stdout from `out`.
/// Plain numbers here; whoever starts one owns its descriptors and its child (sys wraps them).
struct RemoteProcess {
  int pid = -1;
  int in = -1;
  int out = -1;
};

/// Where the command's stdin comes from: nothing (/dev/null); a pipe its starter writes; or
/// such a pipe whose first byte is a gate: the command connects only once one byte is written,
/// so many can be started up front and opened a few at a time (closing it unopened ends it).
enum class Stdin { none, pipe, gated_pipe };

/// What a command's stdin carries: a few bytes at most, or a stream of data (yeet's relays),
/// which the SSH transport carries over a sealed TCP connection of its own where it can
/// (sys/remote/ssh_tcp.hpp), not through sshd.
enum class StdinLoad { light, stream };

/// What to run on another node: this binary with `args` (a hidden row and its flags, never a
/// shell text), its stdin, and whether it is shipped first.
struct RemoteCommand {
  std::vector<std::string> args;
  Ship ship = Ship::never;
  Stdin in = Stdin::none;
  StdinLoad load = StdinLoad::light;
};

class Transport {
 public:
  virtual ~Transport() = default;
  /// Run ezpz with `command` on `host`. A connection failure becomes a result line for
  /// `report_as` (core::encode_result) on its stdout. pid is -1 when nothing could be started;
  /// `in` is -1 unless command.in is a pipe.
  [[nodiscard]] virtual RemoteProcess start(const std::string& host, const RemoteCommand& command,
                                            const BroadcastSpec& spec, const std::string& report_as) = 0;
  /// The local half of a started command, in a process of its own (`ezpz __ssh-stdio ARGS`,
  /// `ezpz __agent-stdio ARGS`): connects and carries this process's stdin and stdout; returns
  /// its exit status.
  virtual int child_main(TransportKind kind, const std::vector<std::string>& args) = 0;
  /// The node half where ezpz brings its own (`ezpz __yeet-agent`, the launcher transport);
  /// 2 for a transport whose node half is someone else's (sshd).
  virtual int node_main(TransportKind /*kind*/, const std::vector<std::string>& /*args*/) { return 2; }
  /// Make `hosts` reachable over spec's transport for one run, before its first start (the
  /// launcher transport starts its agents here); the hosts that cannot be, each with why. Nothing
  /// to do for SSH. close_nodes ends it (the agents stop). It gives up, every host with why,
  /// once `*stop` is set (Ctrl-C) or `*cancel` (the caller no longer needs them), each when given.
  [[nodiscard]] virtual std::map<std::string, std::string> open_nodes(const HostList& /*hosts*/,
                                                                      const BroadcastSpec& /*spec*/,
                                                                      const std::atomic<bool>* /*stop*/,
                                                                      const std::atomic<bool>* /*cancel*/) {
    return {};
  }
  virtual void close_nodes() {}
};

}  // namespace ezpz::core
