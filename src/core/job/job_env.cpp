#include "core/job/job_env.hpp"

#include <cctype>
#include <charconv>

#include "core/base/shell.hpp"

namespace ezpz::core {

std::optional<ShellKind> shell_from_string(std::string_view s) {
  if (s == "bash" || s == "sh") {
    return ShellKind::bash;
  }
  if (s == "zsh") {
    return ShellKind::zsh;
  }
  if (s == "fish") {
    return ShellKind::fish;
  }
  return std::nullopt;
}

namespace {
/// fish reads \' and \\ inside single quotes; POSIX shells do not, so each gets its own form.
std::string fish_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'' || c == '\\') {
      out += '\\';
    }
    out += c;
  }
  return out + "'";
}

bool valid_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) != 0) {
    return false;
  }
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_') {
      return false;
    }
  }
  return true;
}

std::optional<long> number(std::string_view s) {
  long v = 0;
  if (s.empty() || s.size() > 6) {
    return std::nullopt;
  }
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) {
    return std::nullopt;
  }
  return v;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    auto at = s.find(sep, start);
    parts.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) {
      return parts;
    }
    start = at + 1;
  }
}

std::string two(long v) {
  return (v < 10 ? "0" : "") + std::to_string(v);
}
}  // namespace

std::string export_lines(const std::vector<std::pair<std::string, std::string>>& vars, ShellKind shell) {
  std::string out;
  for (const auto& [name, value] : vars) {
    if (shell == ShellKind::fish) {
      out += "set -gx " + name + " " + fish_quote(value) + ";\n";
    } else {
      out += "export " + name + "=" + shell_quote(value) + ";\n";
    }
  }
  return out;
}

std::string command_line_var(const std::string& name, const std::vector<std::string>& words, ShellKind shell) {
  std::string out;
  switch (shell) {
    case ShellKind::bash:
      return "export " + name + "=" + shell_quote(shell_join(words)) + ";\n";
    case ShellKind::zsh:
      out = "typeset -ga " + name + "; " + name + "=(";
      for (const auto& w : words) {
        out += (out.back() == '(' ? "" : " ") + shell_quote(w);
      }
      return out + ");\n";
    case ShellKind::fish:
      out = "set -gx " + name;
      for (const auto& w : words) {
        out += " " + fish_quote(w);
      }
      return out + ";\n";
  }
  return out;
}

Expected<std::string> check_walltime(std::string_view text, Scheduler scheduler) {
  const auto bad = [&] {
    return usage_error("walltime '" + std::string(text) + "' is not HH:MM:SS, MM:SS or minutes" +
                       (scheduler == Scheduler::slurm ? " (or D-HH:MM:SS)" : "") + ", e.g. 01:30:00");
  };
  long days = 0;
  std::string_view rest = text;
  if (auto dash = text.find('-'); dash != std::string_view::npos) {
    auto d = number(text.substr(0, dash));
    if (scheduler != Scheduler::slurm || !d) {
      return bad();
    }
    days = *d;
    rest = text.substr(dash + 1);
  }
  auto parts = split(rest, ':');
  std::vector<long> v;
  for (auto p : parts) {
    auto n = number(p);
    if (!n || *n < 0) {
      return bad();
    }
    v.push_back(*n);
  }
  long h = 0;
  long m = 0;
  long s = 0;
  if (days > 0 || text.find('-') != std::string_view::npos) {
    // Slurm D-HH, D-HH:MM, D-HH:MM:SS
    h = v[0];
    m = v.size() > 1 ? v[1] : 0;
    s = v.size() > 2 ? v[2] : 0;
    if (v.size() > 3) {
      return bad();
    }
  } else if (v.size() == 1) {
    m = v[0];
  } else if (v.size() == 2) {
    m = v[0];
    s = v[1];
  } else if (v.size() == 3) {
    h = v[0];
    m = v[1];
    s = v[2];
  } else {
    return bad();
  }
  if ((v.size() > 1 && (m > 59 || s > 59)) || (days > 0 && h > 23)) {
    return bad();
  }
  const long total = ((days * 24 + h) * 60 + m) * 60 + s;
  if (total <= 0) {
    return usage_error("walltime '" + std::string(text) + "' must be more than zero");
  }
  const long hours = total / 3600;
  return two(hours) + ":" + two(total / 60 % 60) + ":" + two(total % 60);
}

Expected<std::pair<std::string, std::string>> parse_env_assignment(std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos || !valid_name(text.substr(0, eq))) {
    return usage_error("--env '" + std::string(text) + "' is not NAME=VALUE (NAME: letters, digits and _)");
  }
  return std::make_pair(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
}

Expected<std::string> render_submit_script(const SubmitSpec& spec) {
  if (spec.nodes < 1) {
    return usage_error("-N/--nodes must be at least 1 (got " + std::to_string(spec.nodes) + ")");
  }
  if (spec.spare_nodes < 0) {
    return usage_error("--spare-nodes must be at least 0 (got " + std::to_string(spec.spare_nodes) + ")");
  }
  const auto nodes = std::to_string(spec.nodes + spec.spare_nodes);
  if (spec.command.empty()) {
    return usage_error("no command to submit: ezpz submit [OPTIONS] -- COMMAND...");
  }
  EZPZ_TRY_ASSIGN(auto walltime, check_walltime(spec.walltime, spec.scheduler));
  for (const auto& [what, value] : {std::pair<std::string, std::string>{"--job-name", spec.job_name},
                                    {"-q/--queue", spec.queue},
                                    {"-A/--account", spec.account},
                                    {"--filesystems", spec.filesystems}}) {
    for (char c : value) {
      if (std::isspace(static_cast<unsigned char>(c)) != 0 || c == '#' || c == '\'' || c == '"' || c == '\\') {
        return usage_error(what + " '" + value + "' may not hold spaces, quotes, '#' or backslashes");
      }
    }
  }
  for (const auto& arg : spec.sched_args) {
    if (arg.empty() || arg.find_first_of("\n\r") != std::string::npos || arg.front() != '-') {
      return usage_error("--sched-arg '" + arg + "' must be one line of scheduler options, e.g. --sched-arg '-C gpu'");
    }
  }
  std::string s = "#!/bin/bash -l\n";
  if (spec.scheduler == Scheduler::pbs) {
    s += "#PBS -N " + spec.job_name + "\n";
    s += "#PBS -l select=" + nodes + "\n";
    s += "#PBS -l walltime=" + walltime + "\n";
    if (!spec.filesystems.empty()) {
      s += "#PBS -l filesystems=" + spec.filesystems + "\n";
    }
    if (!spec.queue.empty()) {
      s += "#PBS -q " + spec.queue + "\n";
    }
    if (!spec.account.empty()) {
      s += "#PBS -A " + spec.account + "\n";
    }
    s += "#PBS -k doe\n#PBS -j oe\n";
    for (const auto& arg : spec.sched_args) {
      s += "#PBS " + arg + "\n";
    }
  } else if (spec.scheduler == Scheduler::slurm) {
    s += "#SBATCH --job-name=" + spec.job_name + "\n";
    s += "#SBATCH --nodes=" + nodes + "\n";
    if (spec.spare_nodes > 0) {
      s += "#SBATCH --no-kill\n";  // else Slurm ends the job when a node fails: no spare could take its place
    }
    s += "#SBATCH --time=" + walltime + "\n";
    if (!spec.queue.empty()) {
      s += "#SBATCH --partition=" + spec.queue + "\n";
    }
    if (!spec.account.empty()) {
      s += "#SBATCH --account=" + spec.account + "\n";
    }
    for (const auto& arg : spec.sched_args) {
      s += "#SBATCH " + arg + "\n";
    }
  } else {
    return usage_error("ezpz submit writes PBS or Slurm scripts: pass --scheduler pbs or --scheduler slurm");
  }
  s += "# written by ezpz submit\nset -e\n";
  if (!spec.workdir.empty()) {
    s += "cd " + shell_quote(spec.workdir) + "\n";
  }
  for (const auto& [name, value] : spec.env) {
    s += "export " + name + "=" + shell_quote(value) + "\n";
  }
  const auto& a = spec.activate;
  if (a.kind == ActiveEnv::Kind::venv) {
    s += "# the virtual env active at submit time\n. " + shell_quote(a.prefix + "/bin/activate") + "\n";
  } else if (a.kind == ActiveEnv::Kind::conda && !a.conda_base.empty()) {
    s += "# the conda env active at submit time (the script is bash's: . passes the argument)\n. " +
         shell_quote(a.conda_base + "/bin/activate") + " " + shell_quote(a.prefix) + "\n";
  } else if (a.kind == ActiveEnv::Kind::conda) {
    s += "# the conda env active at submit time\nexport CONDA_PREFIX=" + shell_quote(a.prefix) +
         "\nexport PATH=" + shell_quote(a.prefix + "/bin") + ":\"$PATH\"\n";
  }
  const auto ezpz = spec.ezpz.empty() ? std::string("ezpz") : spec.ezpz;
  if (!spec.yeet_src.empty()) {
    const auto dst = shell_quote(spec.yeet_dst);
    s += "# the env copied to node-local storage on every node, then run from that copy\n" +
         shell_join({ezpz, "yeet", "--compress", "--src", spec.yeet_src, "--dst", spec.yeet_dst}) + "\n" + "if [ -f " +
         dst + "/bin/activate ]; then . " + dst + "/bin/activate; else export CONDA_PREFIX=" + dst + " PATH=" + dst +
         "/bin:\"$PATH\"; fi\n";
  }
  std::vector<std::string> argv = {ezpz, "launch"};
  if (!spec.machine.empty()) {
    argv.push_back("--machine=" + spec.machine);
  }
  if (spec.spare_nodes > 0) {
    argv.push_back("--spare-nodes=" + std::to_string(spec.spare_nodes));
  }
  argv.insert(argv.end(), spec.launch_args.begin(), spec.launch_args.end());
  argv.push_back("--");
  argv.insert(argv.end(), spec.command.begin(), spec.command.end());
  s += "exec " + shell_join(argv) + "\n";
  return s;
}

std::vector<CommandFile> command_files(const std::vector<std::string>& command) {
  std::vector<CommandFile> files;
  if (command.empty()) {
    return files;
  }
  const auto& program = command.front();
  files.push_back({program, program.find('/') == std::string::npos});
  const auto name = program.substr(program.rfind('/') + 1);
  const bool python = name.rfind("python", 0) == 0;
  const bool shell = name == "bash" || name == "sh" || name == "zsh" || name == "ksh";
  if (!python && !shell) {
    return files;
  }
  // The interpreter's script: its first word that is not an option (python -m MODULE, -c CODE
  // and a shell's -c run no file).
  for (std::size_t i = 1; i < command.size(); ++i) {
    const auto& w = command[i];
    if (w == "-m" || w == "-c" || w == "-" || w == "--") {
      break;
    }
    if (w.empty() || w.front() != '-') {
      files.push_back({w, false});
      break;
    }
    if (python && (w == "-W" || w == "-X")) {
      ++i;  // an option with a value
    }
  }
  return files;
}

ActiveEnv active_env(const Env& env) {
  ActiveEnv a;
  if (auto venv = env.get("VIRTUAL_ENV")) {
    a.kind = ActiveEnv::Kind::venv;
    a.prefix = *venv;
  } else if (auto conda = env.get("CONDA_PREFIX")) {
    a.kind = ActiveEnv::Kind::conda;
    a.prefix = *conda;
    for (const char* exe : {"CONDA_EXE", "CONDA_PYTHON_EXE"}) {  // <base>/bin/conda, <base>/bin/python
      const auto path = env.get(exe).value_or("");
      const auto bin = path.rfind("/bin/");
      if (a.conda_base.empty() && bin != std::string::npos && bin > 0) {
        a.conda_base = path.substr(0, bin);
      }
    }
  }
  return a;
}

std::optional<std::string> submitted_job_id(std::string_view output, Scheduler scheduler) {
  if (scheduler == Scheduler::slurm) {
    const auto at = output.find("Submitted batch job ");
    if (at == std::string_view::npos) {
      return std::nullopt;
    }
    const auto digits = output.substr(at + 20);
    const auto n = digits.find_first_not_of("0123456789");
    return n == 0 || digits.empty() ? std::nullopt : std::optional(std::string(digits.substr(0, n)));
  }
  const auto first = output.find_first_not_of(" \t\n");
  if (first == std::string_view::npos) {
    return std::nullopt;
  }
  const auto word = output.substr(first, output.find_first_of(" \t\n", first) - first);  // 8817.aurora-pbs
  const bool id = !word.empty() && std::isdigit(static_cast<unsigned char>(word.front())) != 0 &&
                  word.find_first_not_of("0123456789.-_[]abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") ==
                      std::string_view::npos;
  return id ? std::optional(std::string(word)) : std::nullopt;
}

}  // namespace ezpz::core
