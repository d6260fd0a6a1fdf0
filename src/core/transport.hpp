// The port for how a command is started on another node: today the built-in libssh client or
// the user's ssh command (sys/remote); the broadcast (sys/broadcast), doctor --nodes and
// kill --all-nodes (sys/nodes) reach other nodes only through it.
#pragma once

#include <string>
#include <vector>

#include "core/broadcast.hpp"

namespace ezpz::core {

/// A command running on another node: write its stdin to `in`, read its stdout from `out`.
/// Plain numbers here; whoever starts one owns its descriptors and its child (sys wraps them).
struct RemoteProcess {
  int pid = -1;
  int in = -1;
  int out = -1;
};

class Transport {
 public:
  virtual ~Transport() = default;
  /// Run the shell command `command` on `host`. A connection failure becomes a result line for
  /// `report_as` (core::encode_result) on its stdout. `with_stdin` false gives it /dev/null.
  /// `gated` (with stdin): it connects only once one byte is written to `in` (its gate), so many
  /// can be started up front and opened a few at a time; closing `in` unopened ends it.
  /// pid is -1 when nothing could be started.
  [[nodiscard]] virtual RemoteProcess start(const std::string& host, const std::string& command,
                                            const BroadcastSpec& spec, const std::string& report_as, bool with_stdin,
                                            bool gated) = 0;
  /// The local half of a started command, in a process of its own (`ezpz __ssh-stdio ARGS`):
  /// connects and carries this process's stdin and stdout; returns its exit status.
  virtual int child_main(const std::vector<std::string>& args) = 0;
};

}  // namespace ezpz::core
