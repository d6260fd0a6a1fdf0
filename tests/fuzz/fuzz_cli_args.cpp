// Launch argument parsing: the CLI tree on fuzzed argv. The input is three sections split by
// '\x01': argv words (split by '\0'), environment lines (NAME=VALUE), and the text of a
// hostfile at /h. Even first byte: the words go through Cli::parse only (any subcommand, nothing
// runs); odd: `ezpz launch WORDS...` runs end to end against fakes (a fake probe serving /h and
// the fuzzed environment, a fake process runner that never starts anything).
#include "cli/app.hpp"
#include "cli_fixture.hpp"
#include "fuzz_common.hpp"

using namespace ezpz;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  const bool run = data[0] % 2 == 1;
  const auto sections = fuzz::split_all(fuzz::as_text(data + 1, size - 1), '\x01');
  std::vector<std::string> words =
      sections[0].empty() ? std::vector<std::string>{} : fuzz::split_all(sections[0], '\0');
  if (!run) {
    cli::Cli cli;
    std::ostringstream out;
    std::ostringstream err;
    cli::Terminal term(out, err, cli::Colors::none());
    auto parsed = cli.parse(words, term);
    EZPZ_FUZZ_CHECK(parsed.command != nullptr || (parsed.exit_code >= 0 && parsed.exit_code < 100));
    return 0;
  }
  std::map<std::string, std::string, std::less<>> vars;
  if (sections.size() > 1) {
    for (const auto& line : fuzz::split_all(sections[1], '\n')) {
      auto eq = line.find('=');
      if (eq != std::string::npos && eq > 0) {
        vars[line.substr(0, eq)] = line.substr(eq + 1);
      }
    }
  }
  test::FakeProbe probe;
  if (sections.size() > 2) {
    probe.files["/h"] = sections[2];
  }
  probe.programs["mpiexec"] = "/usr/bin/mpiexec";
  words.insert(words.begin(), "launch");
  test::FakeProcess process;
  auto r = test::run_cli(words, test::make_env(std::move(vars), "x1000c0s0b0n0"), probe, &process);
  // ezpz's own codes, or a (fake) job's 0: never CLI11's 100-127 range except 124-127 of its own.
  EZPZ_FUZZ_CHECK(r.rc >= 0 && r.rc <= 255);
  EZPZ_FUZZ_CHECK(!(r.rc >= 100 && r.rc < 124));
  return 0;
}
