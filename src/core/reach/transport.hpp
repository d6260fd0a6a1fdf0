// The ports for reaching other nodes: how a command is started on one (the built-in libssh
// client, the user's ssh command or the job's launcher's agents: sys/remote, sys/agents), and
// many asked or run at once (doctor --nodes, kill --all-nodes: sys/nodes). The broadcast
// (sys/broadcast) reaches other nodes only through them.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/job/hostlist.hpp"
#include "core/ports/process.hpp"
#include "core/reach/spec.hpp"

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
                                            const ReachSpec& spec, const std::string& report_as) = 0;
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
                                                                      const ReachSpec& /*spec*/,
                                                                      const std::atomic<bool>* /*stop*/,
                                                                      const std::atomic<bool>* /*cancel*/) {
    return {};
  }
  virtual void close_nodes() {}
};

/// One node's answer to a remote ezpz started by SystemProbe::ask_nodes. Times are
/// nanoseconds since the Unix epoch on this host's clock.
struct NodeReply {
  std::string host;
  bool ready = false;      ///< the remote ezpz started (its first line was EZPZ-READY)
  std::string reply;       ///< the line it printed after the ping (empty when none came)
  std::string early;       ///< other lines before EZPZ-READY (a connection error's result line)
  long long start_ns = 0;  ///< the connection was started
  long long ready_ns = 0;  ///< EZPZ-READY arrived
  long long ping_ns = 0;   ///< the ping line was written
  long long reply_ns = 0;  ///< the reply line arrived
  int exit_code = -1;
  bool timed_out = false;  ///< still silent at the deadline: stopped by ezpz
};

/// Many nodes asked one question at once over a transport (doctor --nodes). Port (sys/nodes).
class NodeQuery {
 public:
  virtual ~NodeQuery() = default;
  /// Start ezpz with `command` on every host at once over spec's transport (sys/remote: built-in
  /// libssh or spec.ssh_command, the binary shipped when asked); `started` is called once every
  /// connection has been forked. For each host: wait for EZPZ-READY, write "ping\n", read one
  /// line back. Hosts answer in `timeout_s` or are reported not ready.
  [[nodiscard]] virtual std::vector<NodeReply> ask_nodes(const std::vector<std::string>& hosts,
                                                         const RemoteCommand& command, const ReachSpec& spec,
                                                         int timeout_s, const std::function<void()>& started) const = 0;
};

/// ezpz run on many nodes at once over a transport (kill --all-nodes). Port (sys/nodes).
class NodeCommands {
 public:
  virtual ~NodeCommands() = default;
  /// Run `ezpz args...` on each host at once over yeet's transport (spec: ssh command, binary
  /// path), at most `timeout_s` seconds; their output in host order.
  [[nodiscard]] virtual std::vector<NodeOutput> run_on_nodes(const HostList& hosts,
                                                             const std::vector<std::string>& args,
                                                             const ReachSpec& spec, double timeout_s) = 0;
};

}  // namespace ezpz::core
