#include <catch2/catch.hpp>

#include "core/yeet/venv_patch.hpp"

using namespace ezpz::core;

TEST_CASE("replace_prefix stops at path boundaries", "[venv_patch]") {
  CHECK(replace_prefix("#!/lus/env/bin/python\n", "/lus/env", "/tmp/env") == "#!/tmp/env/bin/python\n");
  CHECK(replace_prefix("home=/lus/env2 x=/lus/env", "/lus/env", "/tmp/e") == "home=/lus/env2 x=/tmp/e");
  CHECK_FALSE(replace_prefix("/lus/env_old/bin", "/lus/env", "/tmp/env"));
  CHECK(replace_prefix("\"/lus/env\"", "/lus/env", "/t") == "\"/t\"");
  CHECK_FALSE(replace_prefix("nothing here", "/lus/env", "/t"));
  CHECK_FALSE(replace_prefix("x", "", "/t"));
}

TEST_CASE("activate_prefix reads the shell word VIRTUAL_ENV is set to", "[venv_patch]") {
  CHECK(activate_prefix("x=1\nVIRTUAL_ENV=\"/lus/my env\"\nexport VIRTUAL_ENV\n") == "/lus/my env");
  CHECK(activate_prefix("VIRTUAL_ENV='/var/tmp/z '\"'\"'q/v'\n") == "/var/tmp/z 'q/v");
  CHECK(activate_prefix("VIRTUAL_ENV=/plain/env\n") == "/plain/env");
  CHECK_FALSE(activate_prefix("VIRTUAL_ENV=relative\n"));
  CHECK_FALSE(activate_prefix("no assignment\n"));
}

TEST_CASE("rewrite_activate quotes the new prefix for the shell", "[venv_patch]") {
  const std::vector<std::string> old = {"/var/tmp/z 'q/v"};
  auto bash = rewrite_activate("a\nVIRTUAL_ENV='/var/tmp/z '\"'\"'q/v'\nexport VIRTUAL_ENV\n", old, "/tmp/o k");
  CHECK(bash == "a\nVIRTUAL_ENV='/tmp/o k'\nexport VIRTUAL_ENV\n");
  auto csh = rewrite_activate("  setenv VIRTUAL_ENV '/var/tmp/z '\"'\"'q/v'\n", old, "/tmp/it's");
  CHECK(csh == "  setenv VIRTUAL_ENV '/tmp/it'\"'\"'s'\n");
  auto fish = rewrite_activate("set -gx VIRTUAL_ENV \"/plain\" # note\n", {"/plain"}, "/new");
  CHECK(fish == "set -gx VIRTUAL_ENV '/new' # note\n");
  auto other = rewrite_activate("PATH=\"/plain/bin:$PATH\"", {"/plain"}, "/new");
  CHECK(other == "PATH=\"/new/bin:$PATH\"");
  CHECK_FALSE(rewrite_activate("nothing\n", {"/plain"}, "/new"));
}

TEST_CASE("venv text files and shebangs", "[venv_patch]") {
  for (const char* name :
       {"bin/activate", "bin/activate.csh", "bin/activate.fish", "bin/activate.nu", "bin/Activate.ps1", "pyvenv.cfg"}) {
    CHECK(is_venv_text_file(name));
  }
  CHECK_FALSE(is_venv_text_file("bin/pip"));
  CHECK(shebang_names("#!/lus/env/bin/python3\nimport x\n", "/lus/env"));
  CHECK(shebang_names("#!/bin/sh\n'''exec' \"/lus/my env/bin/python\" \"$0\" \"$@\"\n' '''\n", "/lus/my env"));
  CHECK_FALSE(shebang_names("#!/usr/bin/env python3\nprint('/lus/env')\n", "/lus/env"));
  CHECK_FALSE(
      shebang_names("\x7f"
                    "ELF /lus/env",
                    "/lus/env"));
}

TEST_CASE("portable_shebang wraps interpreters the kernel cannot run", "[venv_patch]") {
  CHECK_FALSE(portable_shebang("#!/tmp/env/bin/python3\n", "/tmp/env"));
  auto spaced = portable_shebang("#!/tmp/my env/bin/python3 -E\nimport x\n", "/tmp/my env");
  CHECK(spaced == "#!/bin/sh\n'''exec' \"/tmp/my env/bin/python3\" -E \"$0\" \"$@\"\n' '''\nimport x\n");
  const std::string long_prefix = "/tmp/" + std::string(130, 'a');
  auto long_line = portable_shebang("#!" + long_prefix + "/bin/python\n", long_prefix);
  REQUIRE(long_line);
  CHECK_THAT(*long_line, Catch::StartsWith("#!/bin/sh\n'''exec' \""));
  auto dollar = portable_shebang("#!/tmp/a $b/bin/python\n", "/tmp/a $b");
  CHECK(dollar == "#!/bin/sh\n'''exec' '/tmp/a $b/bin/python' \"$0\" \"$@\"\n' '''\n");
}

TEST_CASE("relinking and binary detection", "[venv_patch]") {
  CHECK(relink_target("/lus/env/bin/python3.11", "/lus/env", "/tmp/env") == "/tmp/env/bin/python3.11");
  CHECK(relink_target("/lus/env", "/lus/env", "/tmp/env") == "/tmp/env");
  CHECK_FALSE(relink_target("/usr/bin/python3", "/lus/env", "/tmp/env"));
  CHECK_FALSE(relink_target("/lus/env2/x", "/lus/env", "/tmp/env"));
  CHECK(looks_binary(std::string("ab\0cd", 5)));
  CHECK_FALSE(looks_binary("text"));
}
