#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "cli/app.hpp"
#include "cli/completions.hpp"

using ezpz::cli::Cli;
using ezpz::cli::completion_model;
using ezpz::cli::completion_script;

namespace {
std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("completion files in completions/ match what the binary generates", "[completions]") {
  Cli cli;
  for (auto [shell, file] : {std::pair{"bash", "ezpz.bash"}, {"zsh", "_ezpz"}, {"fish", "ezpz.fish"}}) {
    INFO(file << ": regenerate with scripts/gen-completions.sh");
    auto script = completion_script(shell, cli.app());
    REQUIRE(script);
    CHECK(*script == read(std::string(EZPZ_SOURCE_DIR) + "/completions/" + file));
  }
  CHECK_FALSE(completion_script("tcsh", cli.app()));
}

TEST_CASE("the completion model follows the CLI tree", "[completions]") {
  Cli cli;
  auto m = completion_model(cli.app());
  std::vector<std::string> names;
  for (const auto& c : m.commands) {
    names.push_back(c.name);
  }
  CHECK(names == std::vector<std::string>{"launch", "yeet", "tar-env", "test", "plot", "doctor", "env", "submit",
                                          "kill", "self-update", "completions", "help"});
  const auto& launch = m.commands[0];
  auto find = [&](const std::string& name) {
    for (const auto& o : launch.options) {
      if (std::find(o.names.begin(), o.names.end(), name) != o.names.end()) {
        return o;
      }
    }
    FAIL("no option " << name);
    return ezpz::cli::CompletionOption{};
  };
  CHECK(find("--machine").value.kind == ezpz::cli::CompletionValue::Kind::choices);
  CHECK(find("--machine").value.choices.front() == "aurora");
  CHECK(find("--hostfile").value.kind == ezpz::cli::CompletionValue::Kind::file);
  CHECK(find("--launcher").value.choices == std::vector<std::string>{"mpiexec", "mpirun", "srun", "local"});
  CHECK(find("--dry-run").value.kind == ezpz::cli::CompletionValue::Kind::none);
  CHECK(find("-n").names ==
        std::vector<std::string>{"-n", "--nproc", "--np", "--nprocs", "--world-size", "--world_size"});
  CHECK(launch.positional.kind == ezpz::cli::CompletionValue::Kind::command);
  CHECK(m.commands[10].positional.choices == std::vector<std::string>{"bash", "zsh", "fish"});
  CHECK(m.commands[11].positional.kind == ezpz::cli::CompletionValue::Kind::subcommand);
  CHECK(m.commands[4].positional.kind == ezpz::cli::CompletionValue::Kind::file);  // plot FILE
  CHECK(m.commands[1].positional.kind == ezpz::cli::CompletionValue::Kind::file);  // yeet SRC
}
