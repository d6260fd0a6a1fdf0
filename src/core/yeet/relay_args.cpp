#include "core/yeet/relay_args.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "core/base/shell.hpp"
#include "core/yeet/stream_wire.hpp"

namespace ezpz::core {

const std::vector<RelayFlag>& relay_flags() {
  static const std::vector<RelayFlag> flags = {
      {"--host", "This node's name in the results", &RelayArgs::host},
      {"--children", "Relays this node feeds, e.g. a(b,c),d", &RelayArgs::children, false, true},
      {"--dst", "Destination on this node", &RelayArgs::dst, true, true},
      {"--ssh-command", "How to reach further nodes (empty: built-in libssh)", &RelayArgs::ssh_command, false, true},
      {"--exe", "ezpz's path on the head node, tried first", &RelayArgs::exe, false, true},
      {"--exe-digest", "SHA-256 of ezpz, to check or ship it", &RelayArgs::exe_digest, false, true},
      {"--exe-size", "Size of ezpz in bytes", &RelayArgs::exe_size},
      {"--accept-new-host-keys", "Add unknown host keys to known_hosts", &RelayArgs::accept_new_host_keys},
      {"--no-reattach", "Leave a failed child's subtree to the head's repair", &RelayArgs::no_reattach},
      {"--force", "Replace a destination yeet did not make", &RelayArgs::force},
      {"--stall-timeout", "Drop a child that takes no data for this many seconds", &RelayArgs::stall_timeout_s},
      {"--parent-silence", "Give up when the parent sends nothing for this many seconds (0: no limit)",
       &RelayArgs::parent_silence_s},
      {"--user", "Login name when ~/.ssh/config names none", &RelayArgs::user},
      {"--transport", "How to reach further nodes: launcher (their agents, over TCP); empty: SSH",
       &RelayArgs::transport},
      {"--no-encrypt", "Sealed TCP streams (both transports): authenticate every frame but do not encrypt",
       &RelayArgs::no_encrypt},
      {"--log-level", "Diagnostics on stderr, named by this node: info, debug or trace (the head's -v)",
       &RelayArgs::log_level},
      {kSealedStdinFlag, "Stdin is a sealed connection; its receiving keys come on this descriptor (set on the node)",
       &RelayArgs::sealed_stdin},
  };
  return flags;
}

namespace {

std::string number_text(double v) {
  std::string s = std::to_string(v);  // "38.000000": the fixed form every relay parses
  return s;
}

struct Emit {
  const RelayArgs& args;
  const RelayFlag& flag;
  std::vector<std::string>& out;
  void operator()(std::string RelayArgs::*f) const {
    if (!(args.*f).empty() || flag.always) {
      out.insert(out.end(), {std::string(flag.name), args.*f});
    }
  }
  void operator()(unsigned long long RelayArgs::*f) const {
    out.insert(out.end(), {std::string(flag.name), std::to_string(args.*f)});
  }
  void operator()(double RelayArgs::*f) const { out.insert(out.end(), {std::string(flag.name), number_text(args.*f)}); }
  void operator()(bool RelayArgs::*f) const {
    if (args.*f) {
      out.emplace_back(flag.name);
    }
  }
};

struct Set {
  RelayArgs& args;
  const std::string& value;
  bool operator()(std::string RelayArgs::*f) const {
    args.*f = value;
    return true;
  }
  bool operator()(unsigned long long RelayArgs::*f) const {
    const auto* end = value.data() + value.size();
    auto [p, ec] = std::from_chars(value.data(), end, args.*f);
    return ec == std::errc() && p == end;
  }
  bool operator()(double RelayArgs::*f) const {
    char* end = nullptr;
    args.*f = std::strtod(value.c_str(), &end);
    return !value.empty() && end == value.c_str() + value.size();
  }
  bool operator()(bool RelayArgs::*f) const {
    args.*f = true;
    return true;
  }
};

}  // namespace

std::vector<std::string> to_argv(const RelayArgs& args) {
  std::vector<std::string> out;
  for (const auto& flag : relay_flags()) {
    std::visit(Emit{args, flag, out}, flag.field);
  }
  return out;
}

Expected<RelayArgs> parse_relay_args(const std::vector<std::string>& argv) {
  RelayArgs args;
  std::vector<std::string_view> seen;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const auto& flags = relay_flags();
    auto it = std::find_if(flags.begin(), flags.end(), [&](const RelayFlag& f) { return f.name == argv[i]; });
    if (it == flags.end()) {
      return usage_error("a relay takes no argument " + argv[i]);
    }
    const bool takes_value = !std::holds_alternative<bool RelayArgs::*>(it->field);
    if (takes_value && i + 1 >= argv.size()) {
      return usage_error(std::string(it->name) + " needs a value");
    }
    const std::string value = takes_value ? argv[++i] : std::string();
    if (!std::visit(Set{args, value}, it->field)) {
      return usage_error(std::string(it->name) + ": not a number: " + value);
    }
    seen.push_back(it->name);
  }
  for (const auto& flag : relay_flags()) {
    if (flag.required && std::find(seen.begin(), seen.end(), flag.name) == seen.end()) {
      return usage_error(std::string(flag.name) + " is required");
    }
  }
  if (!args.log_level.empty() && args.log_level != "info" && args.log_level != "debug" && args.log_level != "trace") {
    return usage_error("--log-level " + args.log_level + ": info, debug or trace");
  }
  if (!args.transport.empty() && args.transport != "launcher") {
    return usage_error("--transport " + args.transport + ": a relay knows launcher (or none: SSH)");
  }
  return args;
}

RelayArgs passed_down(const BroadcastSpec& spec) {
  RelayArgs a;
  a.dst = spec.destination;
  a.ssh_command = shell_join(spec.reach.ssh_command);
  a.exe = spec.reach.self_exe;
  a.exe_digest = spec.reach.exe_digest;
  a.exe_size = spec.reach.exe_size;
  a.accept_new_host_keys = spec.reach.accept_new_host_keys;
  a.no_reattach = !spec.reattach;
  a.force = spec.force;
  // A relay gives up on a stalled child 2 s before its own parent would give up on it, so the
  // node nearest the stall drops it while its healthy parent is still waiting.
  a.stall_timeout_s = std::max(kMinStallTimeoutS, spec.stall_timeout_s - 2);
  // Every level hears from its parent at least once a second once the stream has begun; the
  // head's own timeout (passed on unchanged) bounds the wait for its first bytes.
  a.parent_silence_s = std::max(spec.parent_silence_s, spec.stall_timeout_s + kParentGraceS);
  a.user = spec.reach.user;
  a.transport = spec.reach.transport == TransportKind::launcher ? "launcher" : "";
  a.no_encrypt = !spec.reach.encrypt;
  a.log_level = spec.log_level;
  return a;
}

BroadcastSpec spec_from(const RelayArgs& args, const std::string& self_exe) {
  BroadcastSpec s;
  s.destination = args.dst;
  s.reach.self_exe = args.exe.empty() ? self_exe : args.exe;
  s.reach.ssh_command = split_command(args.ssh_command);
  s.reach.accept_new_host_keys = args.accept_new_host_keys;
  s.reattach = !args.no_reattach;
  s.force = args.force;
  s.stall_timeout_s = args.stall_timeout_s;
  s.parent_silence_s = args.parent_silence_s;
  s.reach.user = args.user;
  s.reach.exe_digest = args.exe_digest;
  s.reach.exe_size = args.exe_size;
  s.reach.transport = args.transport == "launcher" ? TransportKind::launcher : TransportKind::ssh;
  s.reach.encrypt = !args.no_encrypt;
  s.log_level = args.log_level;
  s.sealed_stdin_fd =
      args.sealed_stdin > 0 && args.sealed_stdin < (1U << 20) ? static_cast<int>(args.sealed_stdin) : -1;
  return s;
}

std::vector<std::string> relay_args(const BroadcastSpec& spec, const RelayNode& node) {
  auto args = passed_down(spec);
  args.host = node.host;
  args.children = encode_tree(node.children);
  auto out = to_argv(args);
  out.insert(out.begin(), std::string(kRelayRow));
  return out;
}

std::vector<std::string> send_args(const BroadcastSpec& spec, const std::vector<RelayNode>& tree) {
  auto args = passed_down(spec);
  args.children = encode_tree(tree);
  auto out = to_argv(args);
  out.insert(out.begin(), "__yeet-send");
  return out;
}

}  // namespace ezpz::core
