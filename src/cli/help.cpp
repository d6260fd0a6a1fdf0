#include "cli/help.hpp"

#include <CLI/App.hpp>

#include "cli/terminal.hpp"
#include "cli/usage_errors.hpp"

namespace ezpz::cli {

void HelpCommand::add_cli(CLI::App& app) {
  app.add_option("command", topic_, "The command to explain")->type_name("COMMAND");
}

int HelpCommand::run(Context& ctx) {
  if (topic_.empty()) {
    ctx.term.out() << ctx.root.help();
    return 0;
  }
  std::vector<std::string> names;
  for (const auto* sub : ctx.root.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == topic_) {
      ctx.term.out() << sub->help("ezpz");
      return 0;
    }
    if (!sub->get_group().empty()) {
      names.push_back(sub->get_name());
    }
  }
  const auto near = did_you_mean(topic_, names);
  ctx.term.error("unknown command '" + topic_ + "'" + (near ? " (did you mean '" + *near + "'?)" : "") +
                 ": run 'ezpz --help' for the list");
  return static_cast<int>(ExitCode::usage);
}

}  // namespace ezpz::cli
