#include <catch2/catch.hpp>

#include "core/base/shell.hpp"

using ezpz::core::shell_join;
using ezpz::core::shell_quote;

TEST_CASE("shell_quote leaves safe words bare and quotes the rest", "[shell]") {
  CHECK(shell_quote("python3") == "python3");
  CHECK(shell_quote("--cpu-bind=list:1-8:9-16") == "--cpu-bind=list:1-8:9-16");
  CHECK(shell_quote("/tmp/a.b_c@d%e+f,g") == "/tmp/a.b_c@d%e+f,g");
  CHECK(shell_quote("") == "''");
  CHECK(shell_quote("a b") == "'a b'");
  CHECK(shell_quote("$HOME;rm -rf /") == "'$HOME;rm -rf /'");
  CHECK(shell_quote("it's") == "'it'\\''s'");
  CHECK(shell_quote("*") == "'*'");
  CHECK(shell_quote("=x") == "'=x'");
}

TEST_CASE("shell_command_line puts env assignments first", "[shell]") {
  CHECK(ezpz::core::shell_command_line({{"A", "1"}, {"B", "x y"}}, {"mpiexec", "--np=2", "echo", "a;b"}) ==
        "A=1 B='x y' mpiexec --np=2 echo 'a;b'");
  CHECK(shell_join({}).empty());
}
