// doctor's questions to the python the ranks run (does torch import, is wandb installed), with
// their answers kept: an answer stands while the python and every directory on its sys.path are
// as they were (an install or removal changes its directory), so a second doctor asks no python.
// `import torch` takes 1.6 s on this project's machines; a kept answer a few stat calls.
#pragma once

#include <string>
#include <string_view>

#include "core/base/env.hpp"
#include "core/base/expected.hpp"
#include "core/ports/probe.hpp"

namespace ezpz::core {

/// The line ask_python's code starts with: it prints sys.path ("EZPZ-SYS-PATH [...]").
inline constexpr std::string_view kSysPathProbe =
    "import sys, json; print('EZPZ-SYS-PATH ' + json.dumps([p for p in sys.path if p]), flush=True)\n";

struct PythonAnswer {
  ProgramOutput output;  ///< what the code printed (stdout and stderr), its exit code
  bool kept = false;     ///< taken from the last answer, no python run
};

/// Where doctor keeps answers: $EZPZ_HOME/cache, else $XDG_CACHE_HOME/ezpz, else ~/.cache/ezpz.
[[nodiscard]] std::optional<std::string> cache_dir(const Env& env);

/// Run `code` with `python` (`python -c`), or take the answer kept for `question` when neither
/// the python, the variables that choose what it imports (VIRTUAL_ENV, CONDA_PREFIX, PYTHONPATH,
/// PYTHONHOME, PYENV_VERSION; the directory too for a wrapper script such as pyenv's shim) nor
/// its sys.path directories changed. A run that timed out is not kept.
[[nodiscard]] Expected<PythonAnswer> ask_python(const Env& env, const SystemProbe& probe, const std::string& python,
                                                const std::string& question, const std::string& code, double timeout_s);

}  // namespace ezpz::core
