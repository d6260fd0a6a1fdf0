#include <catch2/catch.hpp>

#include "core/yeet/plan.hpp"
#include "fake_probe.hpp"

using namespace ezpz::core;
using ezpz::test::FakeProbe;
using ezpz::test::make_env;

namespace {
SourceFacts dir_facts(bool venv = false, bool conda = false) {
  return SourceFacts{true, true, venv, conda, ""};
}
SourceFacts file_facts() {
  return SourceFacts{true, false, false, false, ""};
}
}  // namespace

TEST_CASE("yeet source: SRC, else VIRTUAL_ENV, else CONDA_PREFIX, else a clear error", "[yeet_plan]") {
  YeetRequest r;
  r.source = "/lus/envs/torch";
  auto p = plan_yeet(r, make_env({{"VIRTUAL_ENV", "/other"}, {"USER", "alice"}}), dir_facts(true));
  REQUIRE(p);
  CHECK(p->source == "/lus/envs/torch");
  CHECK(p->destination == "/tmp/alice/torch-" + path_tag("/lus/envs/torch"));
  CHECK(p->method == CopyMethod::sync);
  CHECK(p->env_kind == EnvKind::venv);
  CHECK(p->excludes == std::vector<std::string>{"__pycache__"});
  YeetRequest none;
  CHECK(plan_yeet(none, make_env({{"VIRTUAL_ENV", "/a/venv"}}), dir_facts(true))->source == "/a/venv");
  auto conda = plan_yeet(none, make_env({{"CONDA_PREFIX", "/c/base"}}), dir_facts(false, true));
  CHECK(conda->env_kind == EnvKind::conda);
  CHECK(conda->source_origin == "CONDA_PREFIX");
  auto err = plan_yeet(none, make_env({}), dir_facts());
  REQUIRE_FALSE(err);
  CHECK(err.error().code == ezpz::ExitCode::usage);
  CHECK_THAT(err.error().message, Catch::Contains("VIRTUAL_ENV or CONDA_PREFIX"));
}

TEST_CASE("yeet tarball names and methods", "[yeet_plan]") {
  struct Case {
    const char* path;
    SourceKind kind;
    const char* name;
  };
  for (auto [path, kind, name] :
       {Case{"/p/env.tar.gz", SourceKind::tar_gz, "env"}, Case{"/p/env.tgz", SourceKind::tar_gz, "env"},
        Case{"/p/env.tar.zst", SourceKind::tar_zst, "env"}, Case{"/p/env.tar", SourceKind::tar, "env"}}) {
    YeetRequest r;
    r.source = path;
    r.destination_pattern = "/tmp/{name}";  // the Python ezpz's layout, from the config
    auto p = plan_yeet(r, make_env({}), file_facts());
    REQUIRE(p);
    CHECK(p->kind == kind);
    CHECK(p->name == name);
    CHECK(p->destination == std::string("/tmp/") + name);
    CHECK(p->method == CopyMethod::tarball);
  }
  YeetRequest zip;
  zip.source = "/p/env.zip";
  CHECK_THAT(plan_yeet(zip, make_env({}), file_facts()).error().message, Catch::Contains("not a .tar.gz"));
  YeetRequest missing;
  missing.source = "rel/env";
  SourceFacts absent;
  auto m = plan_yeet(missing, make_env({{"PWD", "/home/u"}}), absent);
  CHECK_THAT(m.error().message, Catch::Contains("/home/u/rel/env") && Catch::Contains("does not exist"));
  YeetRequest c;
  c.source = "/d";
  c.compress = true;
  c.copy = true;
  CHECK(plan_yeet(c, make_env({}), dir_facts())->method == CopyMethod::compress);
  c.compress = false;
  CHECK(plan_yeet(c, make_env({}), dir_facts())->method == CopyMethod::copy);
  c.include_pycache = true;
  CHECK(plan_yeet(c, make_env({}), dir_facts())->excludes.empty());
  c.destination = "out/../dst/";
  CHECK(plan_yeet(c, make_env({{"PWD", "/tmp/w"}}), dir_facts())->destination == "/tmp/w/dst");
}

TEST_CASE("the default destination: one per user and one per source, never another's", "[yeet_plan]") {
  YeetRequest r;
  r.source = "/home/alice/projA/venv";
  const auto alice = make_env({{"USER", "alice"}});
  SourceFacts facts = dir_facts(true);
  facts.real_path = "/lus/alice/projA/venv";  // the hash is of the resolved path: a link to it shares the copy
  const auto a = plan_yeet(r, alice, facts)->destination;
  CHECK(a == "/tmp/alice/venv-" + path_tag("/lus/alice/projA/venv"));
  CHECK(path_tag("/lus/alice/projA/venv").size() == 8);
  // Another project's venv and another user's: other places.
  facts.real_path = "/lus/alice/projB/venv";
  CHECK(plan_yeet(r, alice, facts)->destination != a);
  facts.real_path = "/lus/alice/projA/venv";
  CHECK(plan_yeet(r, make_env({{"USER", "bob"}}), facts)->destination == "/tmp/bob/venv-" + path_tag(facts.real_path));
  // The same source: the same place every time (the next yeet is incremental).
  CHECK(plan_yeet(r, alice, facts)->destination == a);
  // No USER: LOGNAME, else the uid; a name with a slash or a space cannot leave /tmp.
  CHECK(path_user(make_env({{"LOGNAME", "carol"}})) == "carol");
  auto no_name = make_env({});
  no_name.uid = 1234;
  CHECK(path_user(no_name) == "uid1234");
  CHECK(path_user(make_env({{"USER", "../x y"}})) == ".._x_y");
  CHECK(path_user(make_env({{"USER", ".."}})).rfind("uid", 0) == 0);
  // --dst wins; the config's pattern otherwise.
  r.destination = "/local/scratch/env";
  CHECK(plan_yeet(r, alice, facts)->destination == "/local/scratch/env");
  r.destination.reset();
  r.destination_pattern = "/local/{user}/{name}";
  CHECK(plan_yeet(r, alice, facts)->destination == "/local/alice/venv");
}

TEST_CASE("a destination pattern names only what yeet can fill", "[yeet_plan]") {
  CHECK(check_destination_pattern(kDefaultDestination));
  CHECK(check_destination_pattern("/tmp/{name}"));
  CHECK(check_destination_pattern("/dev/shm/{user}-{hash}"));
  CHECK_THAT(check_destination_pattern("tmp/{name}").error().message, Catch::Contains("absolute"));
  CHECK_THAT(check_destination_pattern("/tmp/{nmae}").error().message,
             Catch::Contains("{nmae}") && Catch::Contains("{user}, {name} and {hash}"));
  CHECK_THAT(check_destination_pattern("/tmp/{user}").error().message, Catch::Contains("{name} or {hash}"));
  CHECK_THAT(check_destination_pattern("/tmp/{name").error().message, Catch::Contains("{name"));
  YeetRequest r;
  r.source = "/p/env";
  r.destination_pattern = "/tmp/{project}";
  auto bad = plan_yeet(r, make_env({}), dir_facts());
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ezpz::ExitCode::usage);
  CHECK_THAT(bad.error().message, Catch::Contains("[yeet] destination"));
}

TEST_CASE("destination safety", "[yeet_plan]") {
  auto env = make_env({{"HOME", "/home/u"}});
  const auto& roots = default_yeet_roots();
  CHECK(check_destination("/tmp/env", "/lus/env", env, roots, false));
  CHECK(check_destination("/dev/shm/x/env", "/lus/env", env, roots, false));
  CHECK(check_destination("/local/scratch/env", "/lus/env", env, roots, false));
  auto outside = check_destination("/lus/other", "/lus/env", env, roots, false);
  REQUIRE_FALSE(outside);
  CHECK_THAT(outside.error().message, Catch::Contains("--force"));
  CHECK(check_destination("/lus/other", "/lus/env", env, roots, true));
  CHECK_FALSE(check_destination("/", "/lus/env", env, roots, true));
  CHECK_FALSE(check_destination("/tmp", "/lus/env", env, roots, false));
  CHECK_FALSE(check_destination("/home/u", "/lus/env", env, roots, true));
  CHECK_FALSE(check_destination("/lus/env", "/lus/env", env, roots, true));
  CHECK_FALSE(check_destination("/lus", "/lus/env", env, roots, true));
  CHECK_FALSE(check_destination("/lus/env/sub", "/lus/env", env, roots, true));
  // Names yeet gives its own work and a copy's spare (whose removal would take such a copy).
  for (const auto* own : {"/tmp/env.ezpz-spare", "/tmp/env.ezpz-tmp-42", "/tmp/env.ezpz-tmp-42.apply",
                          "/tmp/env.ezpz-spare/inner", "/tmp/env.ezpz-tmp-7/x"}) {
    auto taken = check_destination(own, "/lus/env", env, roots, true);
    REQUIRE_FALSE(taken);
    CHECK_THAT(taken.error().message, Catch::Contains("pick another --dst"));
  }
  CHECK(check_destination("/tmp/env.ezpz-spare-not", "/lus/env", env, roots, false));
  CHECK(check_destination("/scratch/e", "/lus/env", env, {"/scratch"}, false));
}

TEST_CASE("what yeet may replace at its destination", "[yeet_plan]") {
  DestinationFacts none;
  CHECK(check_replaceable("/tmp/env", none, false, "", "bob"));
  DestinationFacts file{true, "a regular file", false, false, false, true, "bob"};
  auto refused = check_replaceable("/tmp/env", file, false, "", "bob");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message ==
        "/tmp/env is a regular file: yeet would replace it; pass --force if you mean it, or pick another --dst");
  CHECK(check_replaceable("/tmp/env", file, true, "", "bob"));
  DestinationFacts dir{true, "a directory", false, false, false, true, "bob"};
  auto on_node = check_replaceable("/tmp/env", dir, false, "node4", "bob");
  REQUIRE_FALSE(on_node);
  CHECK_THAT(on_node.error().message, Catch::StartsWith("/tmp/env on node4 is a directory yeet did not make"));
  for (auto ok : {&DestinationFacts::empty, &DestinationFacts::yeet_made, &DestinationFacts::env}) {
    auto d = dir;
    d.*ok = true;
    CHECK(check_replaceable("/tmp/env", d, false, "", "bob"));
  }
  // Another user's, in a sticky /tmp: not even --force helps; a path of one's own is named.
  DestinationFacts theirs{true, "a directory", false, true, false, false, "alice"};
  for (bool force : {false, true}) {
    auto no = check_replaceable("/tmp/my env", theirs, force, "", "bob");
    REQUIRE_FALSE(no);
    CHECK(no.error().message ==
          "/tmp/my env belongs to alice and only they can replace it: pick a destination of your own, such as "
          "--dst '/tmp/bob/my env'");
  }
  // Another user's that this one could move (root's case): only with --force (then none of its
  // files is reused: sys/fs clone_tree), for it may be planted to be adopted.
  DestinationFacts planted{true, "a directory", false, false, true, true, "eve", true};
  auto adopt = check_replaceable("/tmp/rootenv", planted, false, "", "root");
  REQUIRE_FALSE(adopt);
  CHECK(adopt.error().message ==
        "/tmp/rootenv belongs to eve: yeet replaces another user's tree only with --force (and then reuses none of "
        "its files), or pick another --dst");
  CHECK(check_replaceable("/tmp/rootenv", planted, true, "", "root"));
  planted.empty = true;  // nothing in it to adopt
  CHECK(check_replaceable("/tmp/rootenv", planted, false, "", "root"));
  auto nameless = check_replaceable("/venv", theirs, false, "", "");
  REQUIRE_FALSE(nameless);
  CHECK_THAT(nameless.error().message, Catch::EndsWith("--dst /$USER/venv"));
}

TEST_CASE("paths", "[yeet_plan]") {
  CHECK(normalize_path("/a/b/../c/./d/") == "/a/c/d");
  CHECK(normalize_path("/../..") == "/");
}

TEST_CASE("[yeet] destination in the config: read, and its placeholders checked", "[cluster]") {
  FakeProbe probe;
  const auto env = make_env({{"HOME", "/h"}});
  CHECK(yeet_settings(env, probe)->destination.empty());  // none: yeet's default
  probe.files["/h/.config/ezpz/config.toml"] = "[yeet]\ndestination = \"/tmp/{name}\"\n";
  CHECK(yeet_settings(env, probe)->destination == "/tmp/{name}");
  probe.files["/h/.config/ezpz/config.toml"] = "[yeet]\ndestination = \"/tmp/{nam}\"\n";
  auto bad = yeet_settings(env, probe);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ezpz::ExitCode::usage);
  CHECK_THAT(bad.error().message, Catch::Contains("/h/.config/ezpz/config.toml: [yeet] destination = \"/tmp/{nam}\"") &&
                                      Catch::Contains("{user}, {name} and {hash}"));
  probe.files["/h/.config/ezpz/config.toml"] = "[yeet]\ndestination = 3\n";
  CHECK_THAT(yeet_settings(env, probe).error().message, Catch::Contains("key 'destination' must be a string"));
  probe.files["/h/.config/ezpz/config.toml"] = "[yeet]\ndestnation = \"/tmp/{name}\"\n";
  CHECK_THAT(yeet_settings(env, probe).error().message,
             Catch::Contains("known keys: allowed_roots, destination, transport"));
}
