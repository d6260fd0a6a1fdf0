// doctor's checks of the Python the ranks run: where its env sits (a shared filesystem at scale: an
// import storm), torch importable (in time), wandb's credentials.
#include <cstdio>

#include "core/base/strings.hpp"
#include "core/doctor/doctor.hpp"
#include "core/doctor/python_answers.hpp"

namespace ezpz::core {
namespace {

/// exit 3: no wandb module for this python.
constexpr const char* kFindWandb =
    "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('wandb') else 3)";
/// The longest doctor waits for a python probe (torch on a shared filesystem can take this long).
constexpr double kPythonProbeS = 10;
constexpr double kTorchImportS = 30;

/// "; its base interpreter is in /usr/bin (ext4)" for a venv whose pyvenv.cfg names its home.
std::string base_interpreter_note(const SystemProbe& probe, const LocalFacts& facts, const std::string& root) {
  std::string base;
  const auto cfg_path = root + "/pyvenv.cfg";
  if (auto cfg = probe.is_file(cfg_path) ? probe.read_file(cfg_path) : Expected<std::string>(failure("not a file"))) {
    for (auto line : split(*cfg, '\n')) {
      auto eq = line.find('=');
      if (eq != std::string_view::npos && trim(line.substr(0, eq)) == "home") {
        base = std::string(trim(line.substr(eq + 1)));
      }
    }
  }
  if (base.empty()) {
    return "";
  }
  const auto real_base = probe.real_path(base);
  const auto bm = mount_of(facts.mounts, real_base);
  auto note = "; its base interpreter is in " + real_base + " (" + (bm ? bm->type : "unknown filesystem") + ")";
  if (bm && is_shared_fs(bm->type)) {
    note += ", shared too: a yeet copy still loads the base's standard library from there";
  }
  return note;
}

}  // namespace

CheckResult check_python(const Env& env, const SystemProbe& probe, const LocalFacts& facts) {
  const std::string name = "python";
  const auto active = active_env(env);
  const auto nodes = facts.cluster ? facts.cluster->hosts.size() : 1;
  const auto above = facts.cluster ? static_cast<std::size_t>(facts.cluster->machine.yeet_above_nodes) : 0;
  // On a shared filesystem: fine for a few nodes; above the machine's yeet_above_nodes, an import storm.
  auto shared = [&](const std::string& what, const Mount& m, const std::string& note) {
    const auto where = what + " is on " + m.type + " (" + m.point + ", shared)";
    if (above == 0 || nodes <= above) {
      return check_ok(name, where + ", fine for " + count_of(nodes, "node") +
                                (above > 0 ? "; above " + std::to_string(above) + ", ezpz yeet it" : "") + note);
    }
    return check_warning(name,
                         where + ": each of the job's " + std::to_string(nodes) +
                             " nodes imports from it at start, an import storm (a 64-node Frontier job spent ~500 s "
                             "importing; Cray PMI gives up at 180 s)" +
                             note,
                         "ezpz yeet copies it to node-local /tmp on every node (ezpz submit --yeet writes that into "
                         "the batch script); then activate it there");
  };
  if (!active) {
    const auto python = probe.find_program("python3");
    if (!python) {
      return check_warning(name, "no virtual env or conda env is active and python3 is not on PATH",
                           "activate the env your job uses (source <venv>/bin/activate, conda activate ...)");
    }
    const auto real = probe.real_path(*python);
    const auto mount = mount_of(facts.mounts, real);
    if (mount && is_shared_fs(mount->type)) {
      return shared("no virtual env or conda env active; python3 (" + real + ")", *mount, "");
    }
    return check_ok(name, "no virtual env or conda env active; python3 is " + real + " (" +
                              (mount ? mount->type : std::string("unknown filesystem")) + ")");
  }
  const auto root = probe.real_path(*active);
  const auto mount = mount_of(facts.mounts, root);
  const auto base_note = base_interpreter_note(probe, facts, root);
  const std::string kind = env.get("VIRTUAL_ENV") ? "venv" : "conda env";
  if (mount && is_shared_fs(mount->type)) {
    return shared(kind + " " + root, *mount, base_note);
  }
  return check_ok(name, kind + " " + root + " is on " + (mount ? mount->type : "an unknown filesystem") +
                            " (node-local)" + base_note);
}

CheckResult check_torch(const Env& env, const SystemProbe& probe) {
  const std::string name = "torch";
  const auto python = probe.find_program("python3");
  if (!python) {
    return check_warning(name, "python3 is not on PATH: no python to import torch",
                         "activate the env your job uses (source <venv>/bin/activate, conda activate ...)");
  }
  const auto asked = "python3 (" + *python + ")";
  auto ran = ask_python(env, probe, *python, "torch", "import torch; print(torch.__version__)", kTorchImportS);
  if (!ran) {
    return check_warning(name, asked + " could not be run: " + ran.error().message, "check the env's python3");
  }
  const auto& out = ran->output;
  if (out.timed_out) {
    return check_warning(name,
                         "import torch in " + asked + " took over " + std::to_string(int(kTorchImportS)) +
                             " s: every rank waits that long at start",
                         "ezpz yeet the env to /tmp on every node and activate it there");
  }
  const std::string said(trim(out.output));
  const auto lines = split(said, '\n');
  const auto last = lines.empty() ? std::string() : std::string(trim(lines.back()));
  const std::string kept = ran->kept ? " (as last time: the python and its sys.path are unchanged)" : "";
  if (out.exit_code != 0) {
    return check_warning(
        name,
        asked + " cannot import torch: " + (last.empty() ? "it exited " + std::to_string(out.exit_code) : last) + kept,
        "activate the env that has torch, or pip install torch in this one");
  }
  return check_ok(name, "torch " + last + " imports in " + asked + kept);
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
    const auto found = ask_python(env, probe, *python, "wandb", kFindWandb, kPythonProbeS);
    if (found && !found->output.timed_out && found->output.exit_code == 3) {
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
