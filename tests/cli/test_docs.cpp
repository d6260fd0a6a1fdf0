#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "cli/app.hpp"
#include "cli/completions.hpp"

namespace {
std::string read(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
/// roff writes '-' as '\-'; compare on the plain text.
std::string unroff(std::string s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == '-') {
      continue;
    }
    out += s[i];
  }
  return out;
}
}  // namespace

TEST_CASE("every option is documented in the man pages", "[docs]") {
  ezpz::cli::Cli cli;
  auto model = ezpz::cli::completion_model(cli.app());
  const auto main_page = unroff(read(std::string(EZPZ_SOURCE_DIR) + "/docs/ezpz.1"));
  for (const auto& o : model.global) {
    for (const auto& n : o.names) {
      CHECK_THAT(main_page, Catch::Contains(n));
    }
  }
  for (const auto& c : model.commands) {
    INFO(c.name);
    CHECK_THAT(main_page, Catch::Contains(c.name));
    // Each command with options has its own page, docs/ezpz-<command>.1.
    std::string page = main_page;
    if (c.name == "launch" || c.name == "yeet" || c.name == "tar-env" || c.name == "test" || c.name == "plot" ||
        c.name == "doctor" || c.name == "env" || c.name == "submit" || c.name == "kill" || c.name == "self-update") {
      page = unroff(read(std::string(EZPZ_SOURCE_DIR) + "/docs/ezpz-" + c.name + ".1"));
    }
    for (const auto& o : c.options) {
      for (const auto& n : o.names) {
        INFO(n);
        CHECK_THAT(page, Catch::Contains(n));
      }
    }
  }
  CHECK_THAT(main_page, Catch::Contains("EXAMPLES"));
}

namespace {

/// The commands of one example line, as words: shell quotes read, a comment dropped, split at
/// && and ;, and cut at | or a redirection (what follows is not ezpz's). Only those that run ezpz.
std::vector<std::vector<std::string>> example_commands(const std::string& line) {
  std::vector<std::vector<std::string>> commands(1);
  std::string word;
  bool in_word = false, cut = false;
  char quote = 0;
  const auto end_word = [&] {
    if (in_word && !cut) {
      commands.back().push_back(word);
    }
    word.clear();
    in_word = false;
  };
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t') {
      end_word();
    } else if (c == '#' && !in_word) {
      break;  // a comment
    } else if (c == ';' || (c == '&' && i + 1 < line.size() && line[i + 1] == '&')) {
      end_word();
      i += c == '&' ? 1 : 0;
      commands.emplace_back();
      cut = false;
    } else if (c == '|' || c == '>' || c == '<') {
      end_word();
      cut = true;
    } else {
      word += c;
      in_word = true;
    }
  }
  end_word();
  std::erase_if(commands, [](const auto& w) { return w.empty() || w.front() != "ezpz"; });
  return commands;
}

/// Example lines: in markdown, those of code blocks that start with `ezpz` or `$ ezpz`; in a man
/// page, the `.B ezpz ...` lines of its EXAMPLES section (roff escapes undone).
std::vector<std::string> example_lines(const std::string& path) {
  std::istringstream in(read(path));
  std::vector<std::string> lines;
  const bool man = path.back() == '1';
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (man) {
      inside = line.rfind(".SH ", 0) == 0 ? line == ".SH EXAMPLES" : inside;
      if (inside && line.rfind(".B ezpz", 0) == 0) {
        std::string plain = unroff(line.substr(3));
        for (const char* font : {"\\fB", "\\fI", "\\fR", "\\fP"}) {
          for (std::size_t at; (at = plain.find(font)) != std::string::npos;) {
            plain.erase(at, 3);
          }
        }
        lines.push_back(plain);
      }
      continue;
    }
    if (line.rfind("```", 0) == 0) {
      inside = !inside;
    } else if (inside && (line.rfind("ezpz ", 0) == 0 || line.rfind("$ ezpz ", 0) == 0)) {
      lines.push_back(line.substr(line[0] == '$' ? 2 : 0));
    }
  }
  return lines;
}

}  // namespace

TEST_CASE("every example in the README, the docs, the man pages and the help parses", "[docs]") {
  const std::string src = EZPZ_SOURCE_DIR;
  std::vector<std::pair<std::string, std::string>> examples;  // (where, line)
  for (const char* doc : {"README.md",
                          "docs/launch.md",
                          "docs/yeet.md",
                          "docs/jobs.md",
                          "docs/doctor.md",
                          "docs/torch.md",
                          "docs/machines.md",
                          "docs/migration.md",
                          "docs/ezpz.1",
                          "docs/ezpz-launch.1",
                          "docs/ezpz-yeet.1",
                          "docs/ezpz-tar-env.1",
                          "docs/ezpz-test.1",
                          "docs/ezpz-plot.1",
                          "docs/ezpz-doctor.1",
                          "docs/ezpz-env.1",
                          "docs/ezpz-submit.1",
                          "docs/ezpz-kill.1",
                          "docs/ezpz-completions.1",
                          "docs/ezpz-self-update.1"}) {
    for (const auto& line : example_lines(src + "/" + doc)) {
      examples.emplace_back(doc, line);
    }
  }
  ezpz::cli::Cli tree;
  for (const auto* sub : tree.app().get_subcommands([](CLI::App*) { return true; })) {
    std::istringstream footer(sub->get_footer());
    for (std::string line; std::getline(footer, line);) {
      if (line.rfind("  ezpz ", 0) == 0) {
        examples.emplace_back("ezpz " + sub->get_name() + " --help", line.substr(2));
      }
    }
  }
  CHECK(examples.size() > 60);
  for (const auto& [where, line] : examples) {
    for (const auto& words : example_commands(line)) {
      INFO(where << ": " << line);
      ezpz::cli::Cli cli;
      std::ostringstream out, err;
      ezpz::cli::Terminal term(out, err, ezpz::cli::Colors::none());
      const auto parsed = cli.parse({words.begin() + 1, words.end()}, term);
      CHECK(parsed.exit_code == 0);
      CHECK(err.str().empty());
    }
  }
}
