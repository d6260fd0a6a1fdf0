#include "cli/launch_args.hpp"

#include <algorithm>
#include <array>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/App.hpp>

#include "core/base/strings.hpp"

namespace ezpz::cli {
namespace {

/// ezpz's single-dash aliases (MPICH/PALS spellings).
const std::array<std::pair<std::string_view, std::string_view>, 5> kAliases = {
    {{"-np", "--np"}, {"--n", "--np"}, {"-ppn", "--ppn"}, {"-nh", "--nh"}, {"-nhosts", "--nhosts"}}};

/// Launcher flags (srun, mpiexec, mpirun) near one of ezpz's that are never taken for a typo.
const std::vector<std::string_view>& launcher_flags() {
  static const std::vector<std::string_view> names = {
      "--nodes",   "--nodelist", "--host",       "--hosts",   "-host",          "-hosts",
      "--ntasks",  "--gpus",     "--env",        "-env",      "--genv",         "-genv",
      "--envall",  "-envall",    "--depth",      "-depth",    "--mca",          "--map-by",
      "-map-by",   "--bind-to",  "-bind-to",     "--rank-by", "--exclusive",    "--overlap",
      "-launcher", "-label",     "--labels-off", "-l",        "--prepend-rank", "-prepend-rank"};
  return names;
}

std::string canonical(std::string token) {
  const std::string name = token.substr(0, token.find('='));
  for (const auto& [from, to] : kAliases) {
    if (name == from) {
      return std::string(to) + token.substr(name.size());
    }
  }
  return token;
}

/// The option `token` names, and whether it takes a value.
const CLI::Option* ezpz_option(const std::string& token, const CLI::App& app) {
  const std::string name = token.substr(0, token.find('='));
  if (const auto* opt = app.get_option_no_throw(name)) {
    return opt;
  }
  // -n8: a short option with a number attached (not -npernode, -nolocal: the launcher's).
  if (token.size() > 2 && token[0] == '-' && token[1] != '-' &&
      token.find_first_not_of("0123456789", 2) == std::string::npos) {
    const auto* opt = app.get_option_no_throw(token.substr(0, 2));
    if (opt != nullptr && opt->get_items_expected_max() > 0) {
      return opt;
    }
  }
  return nullptr;
}

bool takes_value(const CLI::Option& opt, const std::string& token) {
  return opt.get_items_expected_max() > 0 && token.find('=') == std::string::npos &&
         !(token.size() > 2 && token[1] != '-');
}

}  // namespace

std::string torchrun_flag_answer(const std::string& name, const std::string& value) {
  std::string n = name;
  std::replace(n.begin(), n.end(), '_', '-');
  if (n == "--standalone") {
    return "--standalone is torchrun's: ezpz needs no rendezvous; without a scheduler it runs the ranks on this "
           "node: ezpz launch -n N -- CMD";
  }
  if (core::starts_with(n, "--rdzv-")) {
    return name +
           " is torchrun's: ezpz uses no rendezvous server; every rank gets MASTER_ADDR and MASTER_PORT "
           "(the first host) for init_method=\"env://\": drop " +
           name;
  }
  if (n == "--max-restarts") {
    return "--max-restarts is torchrun's: use --retries N (ezpz runs the whole job again after a failure)";
  }
  if (n == "--nnodes" && value.find(':') != std::string::npos) {
    return "--nnodes " + value +
           " is torchrun's elastic range: ezpz runs on a fixed number of nodes: give "
           "--nnodes N, or leave it out to use every node of the job";
  }
  if ((n == "--nproc-per-node" || n == "--ppn") && (value == "gpu" || value == "auto" || value == "cpu")) {
    return name + " " + value + " is torchrun's: leave it out, ezpz starts one rank per GPU of each node";
  }
  if (n == "--node-rank" || n == "--master-addr" || n == "--master-port" || n == "--local-addr") {
    return name +
           " is torchrun's: ezpz gives every rank NODE_RANK, MASTER_ADDR and MASTER_PORT itself (export "
           "MASTER_ADDR or MASTER_PORT to choose them)";
  }
  if (n == "--no-python" || n == "--run-path" || n == "--module") {
    return name + " is torchrun's: ezpz runs the command as given: ezpz launch -- python3 -m app.train";
  }
  if (n == "--tee" || n == "--redirects") {
    return name +
           " is torchrun's: ezpz already keeps every rank's stdout and stderr in files (rank-R.HOST.out, .err in "
           "the launch's record directory, or --log-dir DIR) and shows them on the terminal; --console-ranks 0 "
           "shows only rank 0's: drop " +
           name;
  }
  for (std::string_view other : {"--monitor-interval", "--start-method", "--role", "--logs-specs", "--max-nodes"}) {
    if (n == other) {
      return name + " is torchrun's and has no meaning for ezpz: drop it";
    }
  }
  return "";
}

std::string near_flag(const std::string& name, const CLI::App& app) {
  const auto& known = launcher_flags();
  if (name.size() < 3 || std::find(known.begin(), known.end(), name) != known.end()) {
    return "";
  }
  const bool long_form = core::starts_with(name, "--");
  const std::string bare = name.substr(long_form ? 2 : 1);
  if (!long_form && bare.size() < 4) {
    return "";  // -x, -f, -env: the launcher's short flags
  }
  std::string best;
  std::size_t best_distance = 3;
  for (const auto* opt : app.get_options()) {
    for (const auto& lname : opt->get_lnames()) {
      const std::size_t limit = lname.size() <= 4 ? 1 : 2;
      const std::size_t d = core::edit_distance(bare, lname);
      if (d <= limit && d < best_distance && d > 0) {
        best_distance = d;
        best = "--" + lname;
      } else if (d == 0 && !long_form) {
        return "--" + lname;  // -dry-run
      }
    }
  }
  return best;
}

LaunchTokens split_launch_tokens(const std::vector<std::string>& tokens, bool had_separator, const CLI::App& app) {
  LaunchTokens out;
  auto problem = [&](std::string message) {
    if (out.error.empty()) {
      out.error = std::move(message);
    }
  };
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    std::string t = canonical(tokens[i]);
    if (t.empty() || t[0] != '-' || t == "-") {
      if (!had_separator) {  // the command starts here: its flags are the user's
        out.ezpz.insert(out.ezpz.end(), tokens.begin() + static_cast<std::ptrdiff_t>(i), tokens.end());
        break;
      }
      out.launcher.push_back(t);  // a launcher flag's value
      continue;
    }
    const auto eq = t.find('=');
    const std::string name = t.substr(0, eq);
    const bool next_is_value = i + 1 < tokens.size() && !core::starts_with(tokens[i + 1], "-");
    const std::string value = eq != std::string::npos ? t.substr(eq + 1) : (next_is_value ? tokens[i + 1] : "");
    if (auto answer = torchrun_flag_answer(name, value); !answer.empty()) {
      problem(answer);
      i += eq == std::string::npos && next_is_value && name != "--standalone" ? 1 : 0;
      continue;
    }
    if (t == "--verbose" || t.find_first_not_of('v', 1) == std::string::npos) {
      out.global.push_back(t);  // ezpz's own -v, anywhere before the command
      continue;
    }
    if (const auto* opt = ezpz_option(t, app)) {
      if (eq == 2 && t[1] != '-') {  // -n=2: as -n 2
        out.ezpz.insert(out.ezpz.end(), {name, value});
        continue;
      }
      out.ezpz.push_back(t);
      if (takes_value(*opt, t) && i + 1 < tokens.size()) {
        out.ezpz.push_back(tokens[++i]);
      }
      continue;
    }
    if (auto near = near_flag(name, app); !near.empty()) {
      problem("unknown flag " + name + ": did you mean " + near +
              "? (flags for the launcher itself go before --, "
              "e.g. ezpz launch -x FOO=1 -- python3 train.py)");
      continue;
    }
    if (!had_separator) {
      problem("unknown option " + t +
              " before the command: put launcher flags before -- and the command after "
              "it, e.g. ezpz launch " +
              t + " ... -- python3 train.py");
      continue;
    }
    out.launcher.push_back(t);
  }
  return out;
}

}  // namespace ezpz::cli
