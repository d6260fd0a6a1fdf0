#include "cli/help.hpp"

#include <CLI/App.hpp>

#include "cli/terminal.hpp"

namespace ezpz::cli {

void HelpCommand::add_cli(CLI::App& app) {
  app.add_option("command", topic_, "The command to explain")->type_name("COMMAND");
}

int HelpCommand::run(Context& ctx) {
  if (topic_.empty()) {
    ctx.term.out() << ctx.root.help();
    return 0;
  }
  for (const auto* sub : ctx.root.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == topic_) {
      ctx.term.out() << sub->help("ezpz");
      return 0;
    }
  }
  ctx.term.error("'" + topic_ + "' is not an ezpz command: run 'ezpz --help' for the list");
  return static_cast<int>(ExitCode::usage);
}

}  // namespace ezpz::cli
