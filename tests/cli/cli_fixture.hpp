// Run the CLI on an argv vector without main(): fake system, captured output.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "cli/terminal.hpp"
#include "fake_probe.hpp"

namespace ezpz::test {

class FakeProcess final : public core::ProcessControl {
 public:
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
  Error exec_replace(const std::vector<std::string>& a,
                     const std::vector<std::pair<std::string, std::string>>& e) override {
    argv = a;
    env = e;
    return Error{ExitCode::not_found, "fake exec"};
  }
};

struct CliRun {
  int rc = 0;
  std::string out;
  std::string err;
};

inline CliRun run_cli(const std::vector<std::string>& args, const core::Env& env, const FakeProbe& probe,
                      FakeProcess* process = nullptr) {
  std::ostringstream out;
  std::ostringstream err;
  cli::Terminal term(out, err, false);
  FakeProcess local;
  int rc = cli::run_main(args, env, term, probe, process != nullptr ? *process : local);
  return {rc, out.str(), err.str()};
}

}  // namespace ezpz::test
