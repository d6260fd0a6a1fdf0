#include "cli/yeet_relay.hpp"

#include <algorithm>

#include <CLI/App.hpp>

#include "cli/reach_options.hpp"
#include "cli/terminal.hpp"
#include "core/yeet/install.hpp"
#include "core/yeet/relay_tree.hpp"

namespace ezpz::cli {
namespace {

/// The same flags as options of the parsed path (`ezpz __yeet-relay --help`).
void add_relay_options(CLI::App& app, core::RelayArgs& args) {
  for (const auto& flag : core::relay_flags()) {
    const std::string name(flag.name);
    const std::string help(flag.help);
    std::visit(
        [&](auto field) {
          if constexpr (std::is_same_v<decltype(field), bool core::RelayArgs::*>) {
            app.add_flag(name, args.*field, help);
          } else {
            auto* opt = app.add_option(name, args.*field, help);
            opt->required(flag.required);
          }
        },
        flag.field);
  }
}

Expected<core::RelayArgs> parse(Context& ctx, const std::vector<std::string>& argv, bool needs_host) {
  auto args = core::parse_relay_args(argv);
  if (args && needs_host && args->host.empty()) {
    args = usage_error("--host is required");
  }
  if (!args) {
    ctx.term.error(args.error().message);
  }
  return args;
}

int relay(Context& ctx, const core::RelayArgs& args) {
  start_node_logging(args.log_level, args.host);  // the head's -v, up the tree to its terminal
  auto children = core::decode_tree(args.children);
  if (!children) {
    return ctx.term.fail(children.error());
  }
  // This node's copy is installed as the head installs its own: the same steps and ports.
  const auto spec = core::spec_from(args, ctx.env.self_exe);
  core::NodeInstall install(
      ctx.trees(), ctx.staging(), ctx.manifests(),
      {spec.destination, spec.force, args.host, ctx.env.get("USER").value_or(""), core::WorkLock::none});
  return ctx.broadcaster().relay(args.host, *children, spec, install, ctx.term.out());
}

int send(Context& ctx, const core::RelayArgs& args) {
  auto tree = core::decode_tree(args.children);
  if (!tree) {
    return ctx.term.fail(tree.error());
  }
  auto spec = core::spec_from(args, ctx.env.self_exe);
  spec.this_host = ctx.env.hostname;
  start_node_logging(args.log_level, spec.this_host + " (sending its copy)");
  return ctx.broadcaster().serve_copy(spec.destination, *tree, spec, ctx.term.out());
}

}  // namespace

void YeetRelayCommand::add_cli(CLI::App& app) {
  add_relay_options(app, args_);
}

int YeetRelayCommand::run(Context& ctx) {
  if (args_.host.empty()) {
    return ctx.term.fail(usage_error("--host is required"));
  }
  return relay(ctx, args_);
}

/// `--help` goes to the parsed path, which prints the flags.
static bool wants_help(const std::vector<std::string>& argv) {
  return std::find(argv.begin(), argv.end(), "--help") != argv.end() ||
         std::find(argv.begin(), argv.end(), "-h") != argv.end();
}

std::optional<int> YeetRelayCommand::run_raw(Context& ctx, const std::vector<std::string>& argv) {
  if (wants_help(argv)) {
    return std::nullopt;
  }
  auto args = parse(ctx, argv, true);
  return args ? relay(ctx, *args) : static_cast<int>(args.error().code);
}

void YeetSendCommand::add_cli(CLI::App& app) {
  add_relay_options(app, args_);
}

int YeetSendCommand::run(Context& ctx) {
  return send(ctx, args_);
}

std::optional<int> YeetSendCommand::run_raw(Context& ctx, const std::vector<std::string>& argv) {
  if (wants_help(argv)) {
    return std::nullopt;
  }
  auto args = parse(ctx, argv, false);
  return args ? send(ctx, *args) : static_cast<int>(args.error().code);
}

}  // namespace ezpz::cli
