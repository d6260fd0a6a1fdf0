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
  /// What run() was asked to start, and what it answers.
  std::vector<std::vector<core::ProcessSpec>> runs;
  std::vector<core::RunOptions> run_options;
  std::vector<int> exit_codes = {0};  ///< one per attempt; the last repeats
  Expected<core::RunResult> run(const std::vector<core::ProcessSpec>& processes,
                                const core::RunOptions& options) override {
    runs.push_back(processes);
    run_options.push_back(options);
    core::RunResult r;
    r.exit_code = exit_codes[std::min(runs.size(), exit_codes.size()) - 1];
    return r;
  }
  int reserve_tcp_port() override { return 29500; }
  std::vector<double> sleeps;
  bool sleep_unless_interrupted(double seconds) override {
    sleeps.push_back(seconds);
    return true;
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
