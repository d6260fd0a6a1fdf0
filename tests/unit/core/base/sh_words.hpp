// What a real shell makes of quoted text: run it (fork and exec, no shell of ours in between)
// and read back the words it passed on. Quoting tests check their output with these, never with
// ezpz's own splitter.
#pragma once

#include <catch2/catch.hpp>

#include <cerrno>
#include <string>
#include <string_view>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace ezpz::test {

/// Run argv (argv[0] looked up in PATH) with `cwd` as its directory; its stdout. REQUIREs exit 0.
inline std::string run_for_output(const std::vector<std::string>& argv, const std::string& cwd = "") {
  int out[2];
  REQUIRE(::pipe(out) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::close(out[0]);
    ::close(out[1]);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
      ::_exit(126);
    }
    std::vector<char*> args;
    for (const auto& a : argv) {
      args.push_back(const_cast<char*>(a.c_str()));
    }
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(out[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) {
      text.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(out[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  INFO("ran: " << argv.front() << " ... " << argv.back() << "\noutput: " << text);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return text;
}

/// NUL-terminated words (printf '%s\0' ...) as a list.
inline std::vector<std::string> split_nul(std::string_view text) {
  std::vector<std::string> words;
  std::size_t start = 0;
  for (std::size_t at; (at = text.find('\0', start)) != std::string_view::npos; start = at + 1) {
    words.emplace_back(text.substr(start, at - start));
  }
  REQUIRE(start == text.size());  // every word ended by its NUL
  return words;
}

/// The words `shell` (sh, bash, zsh or fish) passes to a command whose arguments are `line`:
/// runs `SHELL -c "printf '%s\0' LINE"` (in `cwd`: unquoted globs would match files there).
inline std::vector<std::string> sh_words(const std::string& line, const std::string& shell = "/bin/sh",
                                         const std::string& cwd = "") {
  return split_nul(run_for_output({shell, "-c", "printf '%s\\0' " + line}, cwd));
}

/// Strings that break careless quoting: blanks, quotes, expansions, globs, newlines, a leading
/// dash, the empty string, backslashes, control characters, non-ASCII and invalid UTF-8.
inline std::vector<std::string> hostile_strings() {
  return {"",
          " ",
          "plain",
          "a b",
          "  two  spaces  ",
          "tab\there",
          "new\nline",
          "\n",
          "trailing newline\n",
          "it's",
          "'",
          "''",
          "'\\''",
          "\"",
          "a\"b\"c",
          "\"$HOME\"",
          "$HOME",
          "${HOME:-x}",
          "$(touch pwned-by-dollar-paren)",
          "`touch pwned-by-backtick`",
          "$((1+1))",
          "a;touch pwned-by-semicolon",
          "a|b",
          "a&b",
          "a&&b||c",
          "<in >out 2>&1",
          "*",
          "*.txt",
          "?",
          "[a-z]*",
          "{a,b}",
          "~",
          "~root/x",
          "#comment",
          "a#b",
          "!",
          "!!",
          "!$",
          "-n",
          "-e",
          "--",
          "-",
          "=x",
          "x=y",
          "%s%n",
          "\\",
          "a\\",
          "\\\\",
          "back\\slash\\n",
          "\\'",
          "\x01\x1b[31mred\x7f",
          "caf\xc3\xa9 \xe6\xbc\xa2\xe5\xad\x97 \xf0\x9f\x99\x82",
          "\xff\xfe invalid utf-8",
          "/tmp/my env;$(touch /tmp/pwned)/it's"};
}

}  // namespace ezpz::test
