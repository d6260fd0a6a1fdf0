#include "cli/app.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <CLI/CLI.hpp>  // Config.hpp and Formatter.hpp: inline definitions App needs

#include "cli/help_format.hpp"
#include "cli/usage_errors.hpp"
#include "cli/version.hpp"
#include "core/base/log.hpp"
#include "core/base/strings.hpp"

namespace ezpz::cli {
namespace {

bool is_version_flag(const std::string& token) {
  return token == "--version" || token == "-V";
}

bool is_color_flag(const std::string& token) {
  return token == "--color" || core::starts_with(token, "--color=");
}

bool is_global_flag(const std::string& token) {
  if (token == "--verbose" || is_version_flag(token) || token == "--help" || token == "-h" || is_color_flag(token)) {
    return true;
  }
  return token.size() >= 2 && token[0] == '-' && token.find_first_not_of('v', 1) == std::string::npos;
}

bool is_verbose_flag(const std::string& token) {
  return token == "--verbose" ||
         (token.size() >= 2 && token[0] == '-' && token.find_first_not_of('v', 1) == std::string::npos);
}

/// "unknown command 'x'" with the nearest command, or the Python ezpz's name's counterpart.
std::string unknown_command_text(const std::string& word) {
  static const std::map<std::string, std::string, std::less<>> kPythonNames = {
      {"yeet-env", "yeet"}, {"yeet_env", "yeet"}, {"tar_env", "tar-env"}};
  if (const auto it = kPythonNames.find(word); it != kPythonNames.end()) {
    return "unknown command '" + word + "': the Python ezpz's name; here it is 'ezpz " + it->second +
           "' (docs/migration.md)";
  }
  std::vector<std::string> names;
  for (const auto& row : command_table()) {
    if (!row.hidden) {
      names.emplace_back(row.name);
    }
  }
  const auto near = did_you_mean(word, names);
  return "unknown command '" + word + "'" + (near ? " (did you mean '" + *near + "'?)" : "");
}

/// Take every --color flag (`--color=W`, `--color W`) and -v (-vv, --verbose) out of a command's
/// arguments: they are ezpz's, wherever they are.
std::vector<std::string> take_global_flags(std::vector<std::string>& tail) {
  std::vector<std::string> taken;
  for (std::size_t k = 0; k < tail.size();) {
    const std::size_t n = tail[k] == "--color" && k + 1 < tail.size()          ? 2
                          : is_color_flag(tail[k]) || is_verbose_flag(tail[k]) ? 1
                                                                               : 0;
    if (n == 0) {
      ++k;
      continue;
    }
    const auto from = tail.begin() + static_cast<std::ptrdiff_t>(k);
    taken.insert(taken.end(), from, from + static_cast<std::ptrdiff_t>(n));
    tail.erase(from, from + static_cast<std::ptrdiff_t>(n));
  }
  return taken;
}

/// The global flags' last --color (all are before the command word by now) colours what
/// follows, parse errors included.
void apply_color_flags(const std::vector<std::string>& args, Terminal& term, const core::Env& env) {
  for (std::size_t k = 0; k < args.size() && is_global_flag(args[k]); ++k) {
    std::optional<ColorMode> mode;
    if (args[k] == "--color" && k + 1 < args.size()) {
      mode = color_mode_from(args[++k]);
    } else if (core::starts_with(args[k], "--color=")) {
      mode = color_mode_from(std::string_view(args[k]).substr(8));
    }
    if (mode) {
      term.apply_color_mode(env, *mode);
    }
  }
}

}  // namespace

Cli::Cli(std::size_t width)
    : app_("ezpz: launch and feed distributed PyTorch jobs on HPC systems and laptops", "ezpz") {
  auto help = std::make_shared<HelpFormatter>(width);
  app_.formatter(help);  // the subcommands take it from the root
  app_.set_version_flag("-V,--version", version_text(), "Print the version, commit, build date, linkage and arch");
  app_.add_flag("-v,--verbose", verbosity_, "More diagnostics on stderr (repeat for more: -vv, -vvv)");
  app_.add_option("--color", color_,
                  "Colour: auto (each of stdout and stderr alone, on a terminal), always or never; "
                  "without it FORCE_COLOR or CLICOLOR_FORCE turn colour on, NO_COLOR off")
      ->type_name("WHEN")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app_.require_subcommand(0, 1);
  app_.footer(
      "Run 'ezpz help COMMAND' or 'ezpz COMMAND --help' for a command's options.\n"
      "Exit codes: the job's own code; 128+N when it died of signal N; 2 usage error;\n"
      "1 a check or operation failed; 124 timeout; 125 internal error; 126/127 cannot run.");
  // The subcommands' trees are grown when needed (attach): a launch builds only its own.
  std::set<std::string> trailing;
  for (const auto& info : command_table()) {
    commands_.emplace_back(nullptr, info.make());
    if (commands_.back().second->takes_trailing_command()) {
      trailing.insert(std::string(info.name));
    }
  }
  populated_.assign(commands_.size(), false);
  help->set_trailing_commands(std::move(trailing));
}

void Cli::attach(const Command* only) {
  const auto& table = command_table();
  for (std::size_t i = 0; i < commands_.size(); ++i) {
    if (commands_[i].first == nullptr && (only == nullptr || commands_[i].second.get() == only)) {
      auto* sub = app_.add_subcommand(std::string(table[i].name), std::string(table[i].help));
      if (table[i].hidden) {
        sub->group("");  // not listed in help or completions
      }
      commands_[i].first = sub;
    }
  }
}

void Cli::populate(const Command* only) {
  attach(only);
  for (std::size_t i = 0; i < commands_.size(); ++i) {
    if (!populated_[i] && (only == nullptr || commands_[i].second.get() == only)) {
      commands_[i].second->add_cli(*commands_[i].first);
      populated_[i] = true;
    }
  }
}

Command* Cli::command(std::string_view name) {
  const auto& table = command_table();
  for (std::size_t i = 0; i < commands_.size(); ++i) {
    if (table[i].name == name) {
      return commands_[i].second.get();
    }
  }
  return nullptr;
}

Cli::Parsed Cli::parse(std::vector<std::string> args, Terminal& term, const core::Env& env) {
  // Find the subcommand word (only flags may precede it) and cut off "-- CMD...".
  std::size_t i = 0;
  std::optional<std::size_t> json_at;  // `ezpz --json CMD`: --json is the command's, moved after it
  while (i < args.size() && (is_global_flag(args[i]) || args[i] == "--json")) {
    json_at = args[i] == "--json" ? std::optional(i) : json_at;
    i += args[i] == "--color" && i + 1 < args.size() ? 2 : 1;
  }
  if (json_at && i < args.size() && command(args[i]) != nullptr) {
    args.insert(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, "--json");
    args.erase(args.begin() + static_cast<std::ptrdiff_t>(*json_at));
    --i;
  }
  // A word that is no command: refused here, whatever follows (`ezpz nosuch --help` too).
  if (i < args.size() && !args[i].empty() && args[i].front() != '-' && command(args[i]) == nullptr) {
    term.error(unknown_command_text(args[i]));
    term.err() << "Run 'ezpz --help' for usage.\n";
    return {nullptr, static_cast<int>(ExitCode::usage), {}};
  }
  // --version answers before anything else (CLI11 reports it by throwing, which costs
  // a first-exception unwinder setup of ~0.5 ms in a static binary).
  if (std::any_of(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(i), is_version_flag)) {
    term.out() << version_text() << '\n';
    return {nullptr, 0, {}};
  }
  Command* target = i < args.size() ? command(args[i]) : nullptr;
  const bool walks_tree = target == command("help") || target == command("completions");
  populate(walks_tree ? nullptr : target);
  std::vector<std::string> trailing;
  bool had_separator = false;
  if (target != nullptr) {
    auto sep = std::find(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end(), "--");
    if (sep != args.end()) {
      trailing.assign(sep + 1, args.end());
      had_separator = true;
      args.erase(sep, args.end());
    }
    std::vector<std::string> tail(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
    target->normalize(tail, had_separator);
    // --color and -v are global: after the command word too (not inside launch's command).
    auto hoisted = target->take_globals();
    if (!target->takes_trailing_command() || had_separator) {
      const auto more = take_global_flags(tail);
      hoisted.insert(hoisted.end(), more.begin(), more.end());
    }
    // --json: a failure, a usage error included, is one JSON object on stdout too.
    const bool json = std::any_of(tail.begin(), tail.end(), [](const std::string& t) {
      return t == "--json" || core::starts_with(t, "--json=");
    });
    auto sub =
        std::find_if(commands_.begin(), commands_.end(), [&](const auto& c) { return c.second.get() == target; });
    if (json && sub->first->get_option_no_throw("--json") != nullptr) {
      term.set_json(sub->first->get_name());
    }
    args.resize(i + 1);
    args.insert(args.end(), tail.begin(), tail.end());
    args.insert(args.begin(), hoisted.begin(), hoisted.end());
  }
  apply_color_flags(args, term, env);

  const auto words = args;  // as typed (CLI11 takes the vector back to front)
  try {
    std::reverse(args.begin(), args.end());
    app_.parse(args);
  } catch (const CLI::CallForHelp&) {
    term.out() << app_.help();
    return {nullptr, 0, {}};
  } catch (const CLI::CallForAllHelp&) {
    term.out() << app_.help("", CLI::AppFormatMode::All);
    return {nullptr, 0, {}};
  } catch (const CLI::CallForVersion& e) {
    term.out() << e.what() << '\n';
    return {nullptr, 0, {}};
  } catch (const CLI::ParseError& e) {
    auto selected = app_.get_subcommands();
    term.error(explain_usage_error(app_, selected.empty() ? nullptr : selected.back(), words, e));
    std::string where = selected.empty() ? "ezpz --help" : "ezpz " + selected.back()->get_name() + " --help";
    term.err() << "Run '" << where << "' for usage.\n";
    return {nullptr, static_cast<int>(ExitCode::usage), {}};
  }

  auto selected = app_.get_subcommands();
  if (selected.empty()) {
    term.err() << app_.help();
    return {nullptr, static_cast<int>(ExitCode::usage), {}};
  }
  if (auto empty = empty_value_error(*selected.back(), words)) {
    term.error(*empty);
    term.err() << "Run 'ezpz " << selected.back()->get_name() << " --help' for usage.\n";
    return {nullptr, static_cast<int>(ExitCode::usage), {}};
  }
  // Parsed: JSON mode is what the option says (a `--json` in launch's command is the command's).
  if (term.json()) {
    const auto* opt = selected.front()->get_option_no_throw("--json");
    if (opt == nullptr || !opt->as<bool>()) {
      term.set_json("");
    }
  }
  Command* cmd = command(selected.front()->get_name());
  if (had_separator && !cmd->takes_trailing_command()) {
    term.error("ezpz " + selected.front()->get_name() + " takes nothing after --");
    return {nullptr, static_cast<int>(ExitCode::usage), {}};
  }
  if (cmd->takes_trailing_command()) {
    cmd->set_trailing_command(std::move(trailing), had_separator);
  }
  return {cmd, 0, selected.front()->get_name()};
}

int run_main(const std::vector<std::string>& args, const core::Env& env, Terminal& term, const Ports& ports) {
  // Paths that skip building the CLI tree: --version, and the raw rows (the per-rank shim,
  // once per rank; the modes ezpz starts itself: a transport's local half, a watcher).
  if (args.size() == 1 && is_version_flag(args[0])) {
    term.out() << version_text() << '\n';
    return 0;
  }
  if (const auto* row = args.empty() ? nullptr : find_command(args[0]); row != nullptr && row->raw) {
    static const CLI::App no_tree;
    log::set_level(log::level_from(0, env.get("EZPZ_LOG_LEVEL")));
    Context ctx(env, term, ports, row->needs, no_tree);
    std::optional<int> rc;
    try {
      rc = row->make()->run_raw(ctx, {args.begin() + 1, args.end()});
    } catch (const std::exception& e) {
      term.error(std::string("internal error: ") + e.what() + " (please report this with the command you ran)");
      rc = static_cast<int>(ExitCode::internal);
    }
    if (rc) {
      return *rc;
    }
  }
  Cli cli(term.width());
  auto parsed = cli.parse(args, term, env);
  if (parsed.command == nullptr) {
    term.finish(parsed.exit_code);
    return parsed.exit_code;
  }
  log::set_level(log::level_from(cli.verbosity(), env.get("EZPZ_LOG_LEVEL")));
  const auto* row = find_command(parsed.name);
  Context ctx(env, term, ports, row != nullptr ? row->needs : kNoPorts, cli.tree());
  int rc = 0;
  try {
    rc = parsed.command->run(ctx);
  } catch (const std::exception& e) {
    term.error(std::string("internal error: ") + e.what() + " (please report this with the command you ran)");
    rc = static_cast<int>(ExitCode::internal);
  }
  term.finish(rc);
  return rc;
}

}  // namespace ezpz::cli
