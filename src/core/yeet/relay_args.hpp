// What the node that starts a relay (`ezpz __yeet-relay`) or a sender (`ezpz __yeet-send`) tells
// it: one table of flags, used both to build the argv (core::relay_args, send_args) and to parse
// it on the other node (cli/yeet_relay.cpp), so a flag is spelt in one place.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/base/expected.hpp"
#include "core/yeet/broadcast_spec.hpp"
#include "core/yeet/relay_tree.hpp"

namespace ezpz::core {

/// The flag the node half that starts a relay (kRelayRow) over a sealed connection (an agent's
/// session, `__ssh-tcp`) adds: the descriptor it reads the receiving keys from, its stdin being
/// that connection (sys/agents/session).
inline constexpr std::string_view kSealedStdinFlag = "--sealed-stdin";

struct RelayArgs {
  std::string host;         ///< a relay: this node's name in the results
  std::string children;     ///< the relays it feeds, encoded (encode_tree)
  std::string dst;          ///< the destination on every node
  std::string ssh_command;  ///< how to reach further nodes (shell words; empty: built-in libssh)
  std::string exe;          ///< ezpz's path on the head node, tried first
  std::string exe_digest;   ///< SHA-256 of ezpz, to check or ship it
  unsigned long long exe_size = 0;
  bool accept_new_host_keys = false;
  bool no_reattach = false;
  bool force = false;
  double stall_timeout_s = 30;
  double parent_silence_s = 0;
  std::string user;       ///< login name when ~/.ssh/config names none
  std::string transport;  ///< "launcher": further nodes through their agents; empty: SSH
  bool no_encrypt = false;
  std::string log_level;  ///< diagnostics on stderr: "info", "debug", "trace" (the head's -v); empty: warnings
  unsigned long long sealed_stdin = 0;  ///< kSealedStdinFlag's descriptor; 0: stdin is the stream itself
};

/// One flag: its name, its help, and the field it sets (a bool field is a flag without value).
struct RelayFlag {
  std::string_view name;
  std::string_view help;
  std::variant<std::string RelayArgs::*, unsigned long long RelayArgs::*, double RelayArgs::*, bool RelayArgs::*> field;
  bool required = false;  ///< parse_relay_args refuses an argv without it
  bool always = false;    ///< to_argv writes it even when empty (a relay's argv keeps one shape)
};

/// Every flag a relay or sender takes.
[[nodiscard]] const std::vector<RelayFlag>& relay_flags();

/// The flags that carry `args` (fields at their default are left out; `host` only when set).
[[nodiscard]] std::vector<std::string> to_argv(const RelayArgs& args);

/// The inverse of to_argv; an Error naming the flag for anything else.
[[nodiscard]] Expected<RelayArgs> parse_relay_args(const std::vector<std::string>& argv);

/// What a node passes down to the relays it starts: the destination, the transport, the binary,
/// and its timeouts (a relay gives up on a stalled child 2 s before its own parent would).
[[nodiscard]] RelayArgs passed_down(const BroadcastSpec& spec);

/// The spec a relay or sender works with; `self_exe` when the args name no binary path.
[[nodiscard]] BroadcastSpec spec_from(const RelayArgs& args, const std::string& self_exe);

/// `__yeet-relay` arguments for a relay on `node` (its children, how to reach them, the binary).
[[nodiscard]] std::vector<std::string> relay_args(const BroadcastSpec& spec, const RelayNode& node);
/// `__yeet-send` arguments: stream this node's copy of the destination to the relays of `tree`.
[[nodiscard]] std::vector<std::string> send_args(const BroadcastSpec& spec, const std::vector<RelayNode>& tree);

}  // namespace ezpz::core
