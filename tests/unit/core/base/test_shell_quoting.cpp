// Every quoting function whose output a shell reads, checked by that shell: the text goes through
// /bin/sh (and bash, zsh, fish where they read it) and the words the shell passes on must be the
// originals, for strings chosen to break careless quoting (sh_words.hpp).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/base/shell.hpp"
#include "core/job/job_env.hpp"
#include "core/reach/spec.hpp"
#include "core/yeet/venv_patch.hpp"
#include "unit/core/base/sh_words.hpp"

namespace fs = std::filesystem;
using ezpz::test::hostile_strings;
using ezpz::test::run_for_output;
using ezpz::test::sh_words;
using ezpz::test::split_nul;
using Words = std::vector<std::string>;

namespace {

/// A fresh directory with files that an unquoted glob would match; removed at the end of scope.
struct Scratch {
  fs::path dir;
  Scratch() {
    std::string tmpl = (fs::temp_directory_path() / "ezpz-quoting-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    dir = tmpl;
    for (const char* name : {"a.txt", "b", "-n"}) {
      std::ofstream(dir / name) << "x";
    }
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  /// Nothing in the hostile strings ran: only the files put here (and `also`) are here.
  void check_untouched(const std::vector<std::string>& also = {}) const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) {
      names.push_back(e.path().filename().string());
    }
    std::vector<std::string> want = {"-n", "a.txt", "b"};
    want.insert(want.end(), also.begin(), also.end());
    std::sort(names.begin(), names.end());
    std::sort(want.begin(), want.end());
    CHECK(names == want);
  }
  /// An executable at `relative` (made with its directories) that prints, NUL-terminated,
  /// `prefix` (shell words, e.g. "\"$PWD\"") and then its arguments.
  std::string printer(const std::string& relative, const std::string& prefix = "") const {
    const fs::path path = dir / relative;
    fs::create_directories(path.parent_path());
    // Asked for its digest (the start script's check, core::remote_command), it answers as ezpz.
    std::ofstream(path) << "#!/bin/sh\n[ \"$1\" = __self-digest ] && { sha256sum < \"$0\" | cut -c1-64; exit; }\n"
                        << "printf '%s\\0' " << prefix << " \"$@\"\n";
    fs::permissions(path, fs::perms::owner_all);
    return path.string();
  }
};

const std::vector<std::string> kPosixShells = {"/bin/sh", "bash", "zsh"};

/// The words fish (installed by scripts/install-deps.sh; missing, this fails) passes on for `line`.
Words fish_words(const std::string& line, const fs::path& cwd) {
  return split_nul(run_for_output({"fish", "--no-config", "-c", "printf '%s\\0' " + line}, cwd));
}

/// NAME=value pairs EZ_0.. for `values`, and the shell words that print them all ("$EZ_0" ...).
std::pair<std::vector<std::pair<std::string, std::string>>, std::string> as_vars(const Words& values,
                                                                                 bool fish = false) {
  std::vector<std::pair<std::string, std::string>> vars;
  std::string refs;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto name = "EZ_" + std::to_string(i);
    vars.emplace_back(name, values[i]);
    refs += fish ? " $" + name : " \"$" + name + "\"";
  }
  return {vars, refs};
}

}  // namespace

TEST_CASE("shell_quote and shell_join: sh, bash and zsh read back every hostile word", "[shell][sh]") {
  Scratch scratch;
  const auto words = hostile_strings();
  for (const auto& s : words) {
    INFO("word: [" << s << "] quoted: " << ezpz::core::shell_quote(s));
    CHECK(sh_words(ezpz::core::shell_quote(s), "/bin/sh", scratch.dir) == Words{s});
  }
  for (const auto& shell : kPosixShells) {
    INFO("shell: " << shell);
    CHECK(sh_words(ezpz::core::shell_join(words), shell, scratch.dir) == words);
  }
  scratch.check_untouched();
}

TEST_CASE("shell_command_line: the assignments and the command reach the program as given", "[shell][sh]") {
  Scratch scratch;
  const auto words = hostile_strings();
  const auto [vars, refs] = as_vars(words);
  Words argv = {"/bin/sh", "-c", "printf '%s\\0'" + refs + " \"$@\"", "sh"};
  argv.insert(argv.end(), words.begin(), words.end());
  const auto line = ezpz::core::shell_command_line(vars, argv);
  Words want = words;
  want.insert(want.end(), words.begin(), words.end());
  for (const auto& shell : kPosixShells) {
    INFO("shell: " << shell << "\nline: " << line);
    CHECK(split_nul(run_for_output({shell, "-c", line}, scratch.dir)) == want);
  }
  scratch.check_untouched();
}

TEST_CASE("export_lines: sh, bash, zsh and fish set every value as it was", "[job_env][sh]") {
  Scratch scratch;
  const auto words = hostile_strings();
  for (const auto& shell : kPosixShells) {
    const auto [vars, refs] = as_vars(words);
    const auto kind = shell == "zsh" ? ezpz::core::ShellKind::zsh : ezpz::core::ShellKind::bash;
    const auto script = ezpz::core::export_lines(vars, kind) + "printf '%s\\0'" + refs + "\n";
    INFO("shell: " << shell << "\nscript: " << script);
    CHECK(split_nul(run_for_output({shell, "-c", script}, scratch.dir)) == words);
  }
  // fish (installed by scripts/install-deps.sh; missing, this fails) reads its own form.
  const auto [vars, refs] = as_vars(words, true);
  const auto script = ezpz::core::export_lines(vars, ezpz::core::ShellKind::fish) + "printf '%s\\0'" + refs + "\n";
  INFO("fish script: " << script);
  CHECK(split_nul(run_for_output({"fish", "--no-config", "-c", script}, scratch.dir)) == words);
  scratch.check_untouched();
}

TEST_CASE("submit script: cd, exports and the command line run as given", "[job_env][sh]") {
  Scratch scratch;
  const auto words = hostile_strings();
  const auto workdir = scratch.dir / "work dir 'q' $x `y` \"z\"";
  fs::create_directories(workdir);
  ezpz::core::SubmitSpec spec;
  spec.scheduler = ezpz::core::Scheduler::slurm;
  spec.workdir = workdir.string();
  const auto [vars, refs] = as_vars(words);
  spec.env = vars;
  spec.ezpz = scratch.printer("bin it's $HOME/ezpz", "\"$PWD\"" + refs);
  spec.launch_args = {"--ppn=4", "--env", "A=b c;d"};
  spec.command = words;
  const auto text = ezpz::core::render_submit_script(spec);
  REQUIRE(text);
  const auto script = scratch.dir / "job.sh";
  std::ofstream(script) << *text;
  Words want = {workdir.string()};
  want.insert(want.end(), words.begin(), words.end());
  want.insert(want.end(), {"launch", "--ppn=4", "--env", "A=b c;d", "--"});
  want.insert(want.end(), words.begin(), words.end());
  for (const std::string shell : {"bash", "/bin/sh"}) {
    INFO("shell: " << shell << "\nscript:\n" << *text);
    CHECK(split_nul(run_for_output({shell, script.string()}, scratch.dir)) == want);
  }
  scratch.check_untouched({"bin it's $HOME", "job.sh", workdir.filename().string()});
}

TEST_CASE("submit script: the env active at submit time is activated first", "[job_env][sh]") {
  Scratch scratch;
  const auto venv = scratch.dir / "my env 'q' $x";
  fs::create_directories(venv / "bin");
  std::ofstream(venv / "bin" / "activate") << "export EZPZ_ACTIVATED=\"from $1\"\n";
  ezpz::core::SubmitSpec spec;
  spec.scheduler = ezpz::core::Scheduler::pbs;
  spec.workdir = scratch.dir.string();
  spec.ezpz = scratch.printer("ezpz", "\"$EZPZ_ACTIVATED\"");
  spec.command = {"true"};
  for (const auto kind : {ezpz::core::ActiveEnv::Kind::venv, ezpz::core::ActiveEnv::Kind::conda}) {
    spec.activate = {kind, kind == ezpz::core::ActiveEnv::Kind::venv ? venv.string() : "/opt/envs/torch",
                     kind == ezpz::core::ActiveEnv::Kind::venv ? "" : venv.string()};
    const auto text = ezpz::core::render_submit_script(spec);
    REQUIRE(text);
    const auto script = scratch.dir / "job.sh";
    std::ofstream(script) << *text;
    const std::string from = kind == ezpz::core::ActiveEnv::Kind::venv ? "from " : "from /opt/envs/torch";
    for (const std::string shell : {"bash", "/bin/sh"}) {  // (conda's activate takes its argument in bash only)
      if (shell == "/bin/sh" && kind == ezpz::core::ActiveEnv::Kind::conda) {
        continue;
      }
      INFO("shell: " << shell << "\nscript:\n" << *text);
      CHECK(split_nul(run_for_output({shell, script.string()}, scratch.dir)) == Words{from, "launch", "--", "true"});
    }
  }
}

TEST_CASE("remote start command: a remote sh, bash or zsh runs ezpz with every argument as given", "[broadcast][sh]") {
  Scratch scratch;
  const auto words = hostile_strings();
  ezpz::core::ReachSpec spec;
  spec.self_exe = scratch.printer("a b/it's $(x) `y`/ezpz");
  spec.exe_size = 4096;
  const auto line = ezpz::core::remote_command(spec, words, ezpz::core::Ship::never);
  for (const auto& shell : kPosixShells) {
    INFO("shell: " << shell << "\nline: " << line);
    CHECK(split_nul(run_for_output({shell, "-c", line}, scratch.dir)) == words);  // no digest: runs self_exe
  }
  // With the binary's digest it checks it (asks it, __self-digest) before it runs it: the same words arrive.
  spec.exe_digest = run_for_output({"sha256sum", spec.self_exe}).substr(0, 64);
  const auto checked = ezpz::core::remote_command(spec, words, ezpz::core::Ship::when_missing);
  INFO("line: " << checked);
  CHECK(split_nul(run_for_output({"/bin/sh", "-c", checked}, scratch.dir)) == words);
  scratch.check_untouched({"a b"});
}

TEST_CASE("shell_single_quote (activate scripts): sh, bash, zsh and fish read back every word", "[venv_patch][sh]") {
  Scratch scratch;
  for (const auto& s : hostile_strings()) {
    const auto quoted = ezpz::core::shell_single_quote(s);
    INFO("word: [" << s << "] quoted: " << quoted);
    for (const auto& shell : kPosixShells) {
      INFO("shell: " << shell);
      CHECK(sh_words(quoted, shell, scratch.dir) == Words{s});
    }
    if (s.find('\\') == std::string::npos) {  // backslashes: the known failure below
      INFO("shell: fish");
      CHECK(fish_words(quoted, scratch.dir) == Words{s});
    }
  }
  scratch.check_untouched();
}

// KNOWN BUG (src/core/yeet/venv_patch.cpp, not fixed here): fish reads \\ and \' inside single quotes,
// so a new prefix with a backslash before a quote, another backslash or the end breaks the
// `set -gx VIRTUAL_ENV '...'` line that rewrite_activate writes into activate.fish. [!shouldfail]
// keeps this visible: it passes while the bug is there and fails once it is fixed (drop the tag
// then, and the backslash exception above).
TEST_CASE("shell_single_quote: fish reads back words with backslashes", "[venv_patch][sh][!shouldfail]") {
  Scratch scratch;
  for (const auto& s : hostile_strings()) {
    if (s.find('\\') != std::string::npos) {
      const auto quoted = ezpz::core::shell_single_quote(s);
      INFO("word: [" << s << "] quoted: " << quoted);
      CHECK(fish_words(quoted, scratch.dir) == Words{s});
    }
  }
}
