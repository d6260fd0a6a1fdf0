#include "cli/yeet_relay.hpp"

#include <CLI/App.hpp>

#include "cli/terminal.hpp"
#include "core/broadcast.hpp"

namespace ezpz::cli {

std::vector<std::string> split_command(const std::string& command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else if (c == '\\' && quote == '"' && i + 1 < command.size()) {
        word += command[++i];
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < command.size()) {
      word += command[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) {
        words.push_back(word);
        word.clear();
        in_word = false;
      }
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) {
    words.push_back(word);
  }
  return words;
}

void TransportArgs::add_options(CLI::App& app) {
  app.add_option("--dst", dst, "Destination on this node")->required();
  app.add_option("--ssh-command", ssh_command, "How to reach further nodes (empty: built-in libssh)");
  app.add_option("--exe", exe, "ezpz's path on the head node, tried first");
  app.add_option("--exe-digest", exe_digest, "SHA-256 of ezpz, to check or ship it");
  app.add_option("--exe-size", exe_size, "Size of ezpz in bytes");
  app.add_flag("--accept-new-host-keys", accept_new_host_keys, "Add unknown host keys to known_hosts");
  app.add_option("--user", user, "Login name when ~/.ssh/config names none");
  app.add_flag("--no-reattach", no_reattach, "Leave a failed child's subtree to the head's repair");
  app.add_option("--stall-timeout", stall_timeout_s, "Drop a child that takes no data for this many seconds");
  app.add_option("--parent-silence", parent_silence_s,
                 "Give up when the parent sends nothing for this many seconds (0: no limit)");
}

core::BroadcastSpec TransportArgs::spec(const Context& ctx) const {
  core::BroadcastSpec s;
  s.destination = dst;
  s.self_exe = exe.empty() ? ctx.env.self_exe : exe;
  s.ssh_command = split_command(ssh_command);
  s.accept_new_host_keys = accept_new_host_keys;
  s.reattach = !no_reattach;
  s.stall_timeout_s = stall_timeout_s;
  s.parent_silence_s = parent_silence_s;
  s.user = user;
  s.exe_digest = exe_digest;
  s.exe_size = exe_size;
  return s;
}

void YeetRelayCommand::add_cli(CLI::App& app) {
  transport_.add_options(app);
  app.add_option("--host", host_, "This node's name in the results")->required();
  app.add_option("--children", children_, "Relays this node feeds, e.g. a(b,c),d");
}

int YeetRelayCommand::run(Context& ctx) {
  auto children = core::decode_tree(children_);
  if (!children) {
    return ctx.term.fail(children.error());
  }
  return ctx.transfer.relay(host_, *children, transport_.spec(ctx), ctx.term.out());
}

void YeetSendCommand::add_cli(CLI::App& app) {
  transport_.add_options(app);
  app.add_option("--children", children_, "Relays to stream this node's copy of --dst to, e.g. a(b,c),d")->required();
}

int YeetSendCommand::run(Context& ctx) {
  auto tree = core::decode_tree(children_);
  if (!tree) {
    return ctx.term.fail(tree.error());
  }
  auto spec = transport_.spec(ctx);
  spec.this_host = ctx.env.hostname;
  return ctx.transfer.serve_copy(spec.destination, *tree, spec, ctx.term.out());
}

}  // namespace ezpz::cli
