#include <catch2/catch.hpp>

#include "core/hostlist.hpp"

using ezpz::core::expand_nodelist;
using ezpz::core::HostList;
using ezpz::core::parse_hostfile;

TEST_CASE("expand_nodelist: plain names and comma lists", "[hostlist]") {
  CHECK(*expand_nodelist("node001") == HostList{"node001"});
  CHECK(*expand_nodelist(" node001 ") == HostList{"node001"});
  CHECK(*expand_nodelist("a,b,c") == HostList{"a", "b", "c"});
  CHECK(expand_nodelist("")->empty());
}

TEST_CASE("expand_nodelist: ranges keep zero padding", "[hostlist]") {
  CHECK(*expand_nodelist("node[001-003,007,010-012]") ==
        HostList{"node001", "node002", "node003", "node007", "node010", "node011", "node012"});
  CHECK(*expand_nodelist("gpu[1-3]") == HostList{"gpu1", "gpu2", "gpu3"});
  CHECK(*expand_nodelist("n[8-11]") == HostList{"n8", "n9", "n10", "n11"});
  CHECK(*expand_nodelist("n[098-101]") == HostList{"n098", "n099", "n100", "n101"});
}

TEST_CASE("expand_nodelist: several groups, suffixes and lists outside brackets", "[hostlist]") {
  CHECK(*expand_nodelist("rack[1-2]-n[01-02]") == HostList{"rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"});
  CHECK(*expand_nodelist("nid[001-002]-hsn") == HostList{"nid001-hsn", "nid002-hsn"});
  CHECK(*expand_nodelist("login,nid[01-02],gpu[7]") == HostList{"login", "nid01", "nid02", "gpu7"});
  CHECK(*expand_nodelist("x1000c0s[0-1]b0n0") == HostList{"x1000c0s0b0n0", "x1000c0s1b0n0"});
}

TEST_CASE("expand_nodelist: duplicates are dropped, order kept", "[hostlist]") {
  CHECK(*expand_nodelist("b,a,b,n[1-2],n1") == HostList{"b", "a", "n1", "n2"});
}

TEST_CASE("expand_nodelist: malformed input is a usage error naming the problem", "[hostlist]") {
  struct Case {
    const char* expr;
    const char* why;
  };
  for (auto [expr, why] :
       {Case{"nid[1-", "never closed"}, Case{"a[3-1]", "runs backwards"}, Case{"a[]", "empty range"},
        Case{"a[1,,3]", "empty range"}, Case{"a[x-2]", "not a number"}, Case{"a1]", "without a matching"},
        Case{"a[1[2]]", "cannot nest"}, Case{"a[1-2-3]", "not a number"}, Case{"a[0-99999999]", "more than 1000000"}}) {
    INFO(expr);
    auto r = expand_nodelist(expr);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ezpz::ExitCode::usage);
    CHECK_THAT(r.error().message, Catch::Contains(why) && Catch::Contains(expr));
  }
}

TEST_CASE("parse_hostfile: comments, blank lines, slots and counts", "[hostlist]") {
  auto text =
      "# allocation\n"
      "x4102c0s0b0n0.hostmgmt.cm\n"
      "\n"
      "  x4102c0s1b0n0.hostmgmt.cm   # second\n"
      "x4102c0s0b0n0.hostmgmt.cm\n"
      "node3 slots=4\n"
      "node4:8\r\n";
  CHECK(parse_hostfile(text) == HostList{"x4102c0s0b0n0.hostmgmt.cm", "x4102c0s1b0n0.hostmgmt.cm", "node3", "node4"});
  CHECK(parse_hostfile("").empty());
  CHECK(parse_hostfile("# only a comment\n\n").empty());
}

TEST_CASE("short_hostname strips the domain", "[hostlist]") {
  CHECK(ezpz::core::short_hostname("x4102c0s0b0n0.hostmgmt.cm.aurora.alcf.anl.gov") == "x4102c0s0b0n0");
  CHECK(ezpz::core::short_hostname("laptop") == "laptop");
}

TEST_CASE("check_remote_host: names ssh would read as options or split are refused", "[hostlist]") {
  using ezpz::core::check_remote_host;
  for (const char* ok : {"node1", "x4102c0s0b0n0.hostmgmt.cm.aurora", "a-b", "$(touch${IFS}x)", "a;b", "q'x"}) {
    INFO(ok);
    CHECK(check_remote_host(ok));
  }
  for (const char* bad : {"", "-oProxyCommand=touch /tmp/x", "-", "a b", "a\nb", "a\tb", "a\x7f"}) {
    INFO(bad);
    auto r = check_remote_host(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ezpz::ExitCode::usage);
  }
  CHECK_THAT(check_remote_host("-oProxyCommand=x").error().message, Catch::Contains("starts with '-'"));
}

TEST_CASE("parse_hostfile: a bare count names no host (fuzz finding)", "[hostlist]") {
  // ":8" used to become an empty host name (the MPICH count stripped from nothing).
  CHECK(parse_hostfile(":8\nnode1:4\n:\n") == HostList{"node1", ":"});
  CHECK(parse_hostfile(":8 slots=2\n").empty());
}

TEST_CASE("expand_nodelist: names longer than DNS allows are refused before expanding (memory bound)", "[hostlist]") {
  // "a[<5000 zeros>-999999]" made a million 5000-character names (5 GB): ezpz died of bad_alloc.
  for (const auto& expr : {"a[" + std::string(5000, '0') + "-999999]", std::string(300, 'a'),
                           std::string(250, 'a') + "[1-100000]", "a[1-2]" + std::string(260, 'b')}) {
    INFO(expr.substr(0, 20));
    auto r = expand_nodelist(expr);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("longer than 255 characters"));
  }
  CHECK(expand_nodelist(std::string(250, 'a') + "[1-3]")->size() == 3);
  CHECK(expand_nodelist("n[" + std::string(200, '0') + "-2]")->back() == "n" + std::string(199, '0') + "2");
}
