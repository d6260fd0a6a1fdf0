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

void YeetRelayCommand::add_cli(CLI::App& app) {
  app.add_option("--dst", dst_, "Destination on this node")->required();
  app.add_option("--host", host_, "This node's name in the results")->required();
  app.add_option("--children", children_, "Relays this node feeds, e.g. a(b,c),d");
  app.add_option("--ssh-command", ssh_command_, "How to reach the children");
}

int YeetRelayCommand::run(Context& ctx) {
  auto children = core::decode_tree(children_);
  if (!children) {
    ctx.term.error(children.error().message);
    return static_cast<int>(ExitCode::usage);
  }
  core::BroadcastSpec spec{dst_, ctx.env.self_exe, split_command(ssh_command_)};
  if (spec.ssh_command.empty()) {
    spec.ssh_command = {"ssh"};
  }
  return ctx.transfer.relay(host_, *children, spec, ctx.term.out());
}

void YeetSendCommand::add_cli(CLI::App& app) {
  app.add_option("--dst", dst_, "The copy on this node, and the destination there")->required();
  app.add_option("--to", to_, "The node to send to")->required();
  app.add_option("--ssh-command", ssh_command_, "How to reach it");
}

int YeetSendCommand::run(Context& ctx) {
  core::BroadcastSpec spec{dst_, ctx.env.self_exe, split_command(ssh_command_)};
  if (spec.ssh_command.empty()) {
    spec.ssh_command = {"ssh"};
  }
  const auto name = dst_.substr(dst_.rfind('/') + 1);
  int rc = 1;
  for (const auto& r : ctx.transfer.broadcast(dst_, name, core::relay_tree({to_}, 1), spec, {})) {
    ctx.term.out() << core::encode_result(r) << '\n';
    rc = r.ok ? 0 : 1;
  }
  return rc;
}

}  // namespace ezpz::cli
