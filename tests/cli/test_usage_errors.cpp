// Usage errors in ezpz's voice: the word as typed, what is right, an example; exit code 2.
#include <catch2/catch.hpp>

#include <sstream>

#include "cli/app.hpp"
#include "cli/usage_errors.hpp"

using ezpz::cli::Cli;
using ezpz::cli::Terminal;
using Strings = std::vector<std::string>;

namespace {

/// The first line ezpz says for `args`, and the exit code.
std::pair<int, std::string> refusal(const Strings& args) {
  Cli cli;
  std::ostringstream out, err;
  Terminal term(out, err, ezpz::cli::Colors::none());
  auto p = cli.parse(args, term);
  return {p.exit_code, err.str().substr(0, err.str().find('\n'))};
}

/// None of CLI11's own words: parser types, its phrases, floating-point ranges.
void check_ezpz_voice(const std::string& line) {
  INFO(line);
  for (const char* cli11 : {"TEXT", "INT", "FLOAT", "required", "Could not convert", "not in range", "not expected",
                            "{", "000000", "Allowed values"}) {
    CHECK(line.find(cli11) == std::string::npos);
  }
  CHECK_THAT(line, Catch::StartsWith("ezpz: error: "));
}

}  // namespace

TEST_CASE("usage errors: a misspelt command is named with what was meant", "[cli][usage]") {
  CHECK(refusal({"lauch"}) ==
        std::pair(2, std::string("ezpz: error: unknown command 'lauch' (did you mean 'launch'?)")));
  // Not CLI11's reversed "true -- launh".
  CHECK(refusal({"launh", "--", "true"}) ==
        std::pair(2, std::string("ezpz: error: unknown command 'launh' (did you mean 'launch'?)")));
  CHECK(refusal({"yeeet"}).second == "ezpz: error: unknown command 'yeeet' (did you mean 'yeet'?)");
  CHECK(refusal({"frobnicate"}).second == "ezpz: error: unknown command 'frobnicate'");
  Cli cli;
  std::ostringstream out, err;
  Terminal term(out, err, ezpz::cli::Colors::none());
  auto help = cli.parse({"help", "lauch"}, term);
  REQUIRE(help.command != nullptr);
  ezpz::core::Env env;
  const ezpz::cli::Ports ports{};
  ezpz::cli::Context ctx(env, term, ports, ezpz::cli::kNoPorts, cli.app());
  CHECK(help.command->run(ctx) == 2);
  CHECK(err.str() == "ezpz: error: unknown command 'lauch' (did you mean 'launch'?): run 'ezpz --help' for the list\n");
  CHECK(refusal({"--colr", "never", "doctor"}).second ==
        "ezpz: error: unknown option '--colr' for ezpz (did you mean '--color'?)");
  CHECK(refusal({"yeet", "--jsn"}).second ==
        "ezpz: error: unknown option '--jsn' for 'ezpz yeet' (did you mean '--json'?)");
  CHECK(refusal({"yeet", "--bogus"}).second == "ezpz: error: unknown option '--bogus' for 'ezpz yeet'");
  CHECK(refusal({"-x"}).second == "ezpz: error: unknown option '-x' for ezpz");
  CHECK(refusal({"--color"}).second == "ezpz: error: --color needs one of auto, always, never, e.g. --color auto");
  CHECK(refusal({"yeet", "a", "b"}).second == "ezpz: error: unexpected argument 'b' for 'ezpz yeet'");
}

TEST_CASE("usage errors: a bad or missing value names the flag as typed, with an example", "[cli][usage]") {
  CHECK(refusal({"launch", "-n"}) == std::pair(2, std::string("ezpz: error: -n needs a whole number, e.g. -n 8")));
  CHECK(refusal({"launch", "--np", "abc", "--", "x"}).second ==
        "ezpz: error: --np needs a whole number, e.g. --np 8 (got 'abc')");
  CHECK(refusal({"launch", "--nproc=x", "--", "x"}).second ==
        "ezpz: error: --nproc needs a whole number, e.g. --nproc 8 (got 'x')");
  CHECK(refusal({"yeet", "--stall-timeout", "abc"}).second ==
        "ezpz: error: --stall-timeout needs a number of seconds, e.g. --stall-timeout 30 (got 'abc')");
  CHECK(refusal({"yeet", "--stall-timeout", "99999"}).second ==
        "ezpz: error: --stall-timeout must be between 1 and 3600, e.g. --stall-timeout 30 (got '99999')");
  CHECK(refusal({"yeet", "--fanout", "100"}).second ==
        "ezpz: error: --fanout must be between 1 and 64, e.g. --fanout 8 (got '100')");
  CHECK(refusal({"yeet", "--strategy", "foo"}).second ==
        "ezpz: error: --strategy must be one of tree, greedy, e.g. --strategy tree (got 'foo')");
  CHECK(refusal({"yeet", "--max-bytes", "12Q"}).second ==
        "ezpz: error: --max-bytes needs a size such as 20G, 512M or 1T, e.g. --max-bytes 20G (got '12Q')");
  CHECK(refusal({"yeet", "--dst"}).second == "ezpz: error: --dst needs a path, e.g. --dst /tmp/env");
  CHECK(refusal({"test", "--tp", "0"}).second == "ezpz: error: --tp must be above 0, e.g. --tp 8 (got '0')");
  CHECK(refusal({"completions", "tcsh"}).second ==
        "ezpz: error: SHELL must be one of bash, zsh, fish, e.g. ezpz completions bash (got 'tcsh')");
  CHECK(refusal({"completions"}).second == "ezpz: error: ezpz completions needs SHELL, e.g. ezpz completions bash");
  CHECK(refusal({"doctor", "--nodes", "--transport", "x"}).second ==
        "ezpz: error: --transport must be one of auto, launcher, ssh, e.g. --transport auto (got 'x')");
  // One value given twice, under two spellings or one.
  CHECK(refusal({"submit", "-N", "2", "-t", "10", "--nodes", "3", "--", "true"}) ==
        std::pair(2, std::string("ezpz: error: -N 2 and --nodes 3 both set --nodes: give it once")));
  CHECK(refusal({"yeet", "--fanout", "2", "--fanout=3"}).second ==
        "ezpz: error: --fanout 2 and --fanout 3 both set --fanout: give it once");
}

TEST_CASE("usage errors: every option's missing value, in every command, is said in ezpz's voice", "[cli][usage]") {
  Cli cli;
  auto& root = cli.app();
  for (auto* sub : root.get_subcommands([](CLI::App* a) { return !a->get_group().empty(); })) {
    for (const auto* opt : sub->get_options()) {
      if (opt->get_positional() || opt->get_type_size_min() == 0 || opt->get_expected_min() == 0) {
        continue;
      }
      const std::string flag =
          opt->get_lnames().empty() ? "-" + opt->get_snames().front() : "--" + opt->get_lnames().front();
      const auto [rc, line] = refusal({sub->get_name(), flag});
      INFO(sub->get_name() << " " << flag);
      CHECK(rc == 2);
      check_ezpz_voice(line);
      CHECK_THAT(line,
                 Catch::StartsWith("ezpz: error: " + flag + " needs ") && Catch::Contains(", e.g. " + flag + " "));
      // The example itself is accepted (parsing may still stop later, e.g. at a missing command).
      const auto example = ezpz::cli::example_value(*opt);
      const auto with_example = refusal({sub->get_name(), flag, example, "--", "true"}).second;
      CHECK(with_example.find(flag + " ") != 0);
      CHECK(with_example.find("(got '" + example + "')") == std::string::npos);
    }
  }
}

TEST_CASE("did you mean: near words only", "[cli][usage]") {
  const Strings commands{"launch", "yeet", "tar-env", "test", "plot", "doctor", "env", "submit", "kill"};
  CHECK(ezpz::cli::did_you_mean("lauch", commands) == "launch");
  CHECK(ezpz::cli::did_you_mean("dcotor", commands) == "doctor");
  CHECK(ezpz::cli::did_you_mean("tarenv", commands) == "tar-env");
  CHECK(ezpz::cli::did_you_mean("sbumit", commands) == "submit");
  CHECK_FALSE(ezpz::cli::did_you_mean("python", commands));
  CHECK_FALSE(ezpz::cli::did_you_mean("x", commands));
  CHECK(ezpz::cli::did_you_mean("--stall", {"--stall-timeout", "--strategy"}) == "--stall-timeout");
}
