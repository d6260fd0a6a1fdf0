// doctor's checks of the Python the ranks run: torch importable (in time), wandb's credentials.
#include <cstdio>

#include "core/base/strings.hpp"
#include "core/doctor/doctor.hpp"

namespace ezpz::core {
namespace {

/// exit 3: no wandb module for this python.
constexpr const char* kFindWandb =
    "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('wandb') else 3)";
/// The longest doctor waits for a python probe (torch on a shared filesystem can take this long).
constexpr double kPythonProbeS = 10;
constexpr double kTorchImportS = 30;

}  // namespace

CheckResult check_torch(const HostProbe& probe) {
  const std::string name = "torch";
  const auto python = probe.find_program("python3");
  if (!python) {
    return check_warning(name, "python3 is not on PATH: no python to import torch",
                         "activate the env your job uses (source <venv>/bin/activate, conda activate ...)");
  }
  const auto asked = "python3 (" + *python + ")";
  auto ran = probe.run_program({*python, "-c", "import torch; print(torch.__version__)"}, {}, {}, kTorchImportS);
  if (!ran) {
    return check_warning(name, asked + " could not be run: " + ran.error().message, "check the env's python3");
  }
  if (ran->timed_out) {
    return check_warning(name,
                         "import torch in " + asked + " took over " + std::to_string(int(kTorchImportS)) +
                             " s: every rank waits that long at start",
                         "ezpz yeet the env to /tmp on every node and activate it there");
  }
  const std::string said(trim(ran->output));
  const auto lines = split(said, '\n');
  const auto last = lines.empty() ? std::string() : std::string(trim(lines.back()));
  if (ran->exit_code != 0) {
    return check_warning(
        name, asked + " cannot import torch: " + (last.empty() ? "it exited " + std::to_string(ran->exit_code) : last),
        "activate the env that has torch, or pip install torch in this one");
  }
  return check_ok(name, "torch " + last + " imports in " + asked);
}

CheckResult check_wandb(const Env& env, const SystemProbe& probe) {
  const std::string name = "wandb";
  const auto mode = to_lower(env.get("WANDB_MODE").value_or(""));
  if (mode == "offline" || mode == "disabled" || mode == "dryrun" ||
      to_lower(env.get("WANDB_DISABLED").value_or("")) == "true") {
    return check_ok(name, "W&B is " +
                              (mode.empty() ? std::string("disabled (WANDB_DISABLED)") : mode + " (WANDB_MODE)") +
                              ": no credentials needed");
  }
  if (env.has("WANDB_API_KEY")) {
    return check_ok(name, "WANDB_API_KEY is set");
  }
  // Not installed for the python ranks run: nothing W&B could need.
  const auto python = probe.find_program("python3");
  if (python) {
    const auto found = probe.run_program({*python, "-c", kFindWandb}, {}, {}, kPythonProbeS);
    if (found && !found->timed_out && found->exit_code == 3) {
      return check_ok(name, "wandb is not installed for " + *python + ": nothing to check");
    }
  }
  std::string host = "api.wandb.ai";
  if (auto base = env.get("WANDB_BASE_URL")) {
    auto h = *base;
    if (auto p = h.find("://"); p != std::string::npos) {
      h = h.substr(p + 3);
    }
    host = h.substr(0, h.find_first_of("/:"));
  }
  const auto netrc = env.get("NETRC").value_or(env.get("HOME").value_or("") + "/.netrc");
  if (auto text = probe.read_file(netrc)) {
    std::vector<std::string> words;
    std::string word;
    for (char ch : *text + "\n") {
      if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
        if (!word.empty()) {
          words.push_back(std::move(word));
        }
        word.clear();
      } else {
        word += ch;
      }
    }
    for (std::size_t i = 0; i + 1 < words.size(); ++i) {
      if (words[i] == "machine" && words[i + 1] == host) {
        return check_ok(name, netrc + " has credentials for " + host);
      }
    }
  }
  return check_warning(name, "no W&B credentials (WANDB_API_KEY, " + netrc + " for " + host + ") and not offline",
                       "wandb login, export WANDB_API_KEY=..., or WANDB_MODE=offline (compute nodes are often "
                       "offline)");
}

}  // namespace ezpz::core
