#include <catch2/catch.hpp>

#include <chrono>

#include "core/job/hostlist.hpp"

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
      "node4:8\r\n"
      "\t10.0.0.7\tslots=2 max_slots=8\r\n"
      "node5 max-slots=2\n"
      "   \t \r\n"
      "node6.";
  CHECK(*parse_hostfile(text, "/h") == HostList{"x4102c0s0b0n0.hostmgmt.cm", "x4102c0s1b0n0.hostmgmt.cm", "node3",
                                                "node4", "10.0.0.7", "node5", "node6."});
  CHECK(parse_hostfile("", "/h")->empty());
  CHECK(parse_hostfile("# only a comment\n\n", "/h")->empty());
  CHECK(*parse_hostfile("a\r\nb\r\n", "/h") == HostList{"a", "b"});  // CRLF
  CHECK(*parse_hostfile("host:4\n", "/h") == HostList{"host"});
  CHECK(*parse_hostfile("host slots=4\n", "/h") == HostList{"host"});
  CHECK(*parse_hostfile(std::string(63, 'a') + "." + std::string(63, 'b'), "/h") ==
        HostList{std::string(63, 'a') + "." + std::string(63, 'b')});
}

TEST_CASE("parse_hostfile: a line that is not a host name is a usage error naming the file and line", "[hostlist]") {
  struct Case {
    std::string text;
    std::size_t line;
    const char* shown;  ///< what the message shows of the line
    const char* why;
  };
  const std::string label64(64, 'a');
  const std::string name254 =
      std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') + "." + std::string(62, 'd');
  const std::vector<Case> cases = {
      {std::string("ok\n\x7f"
                   "ELF\x02\x01\x01\x00\x00\xff\xfe\n",
                   15),
       2, "'\\x7fELF\\x02", "holds"},
      {"ok\nnode[1-\n", 2, "'node[1-'", "holds '['"},
      {"# c\n-oProxyCommand=x\n", 2, "'-oProxyCommand=x'", "starts with '-'"},
      {"a.-b\n", 1, "'a.-b'", "label starting with '-'"},
      {label64 + "\n", 1, "'aaaa", "label longer than 63"},
      {name254 + "\n", 1, "'aaaa", "longer than 253"},
      {"a..b\n", 1, "'a..b'", "empty label"},
      {":8\n", 1, "''", "is empty"},
      {"host:x\n", 1, "'host:x'", "HOST:N"},
      {"host:0\n", 1, "'host:0'", "HOST:N"},
      {"host slots=x\n", 1, "'slots=x'", "slots=N"},
      {"host other\n", 1, "'other'", "slots=N"},
      {"a\nb c\r\n", 2, "'c'", "slots=N"},
      {"a\rb\n", 1, "'a\\rb'", "holds '\\r'"},
      {"$(touch x)\n", 1, "'$(touch'", "holds '$'"},
      {"h\x1b[31m\n", 1, "'h\\x1b[31m'", "holds '\\x1b'"},
      {"caf\xc3\xa9\n", 1, "'caf\xc3\xa9'", "holds '\\xc3'"},
      {"a_b\n", 1, "'a_b'", "holds '_'"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto r = parse_hostfile(c.text, "/jobs/host\x1b]file");
    REQUIRE_FALSE(r);
    const auto& m = r.error().message;
    CHECK(r.error().code == ezpz::ExitCode::usage);
    CHECK_THAT(m, Catch::StartsWith("hostfile /jobs/host\\x1b]file line " + std::to_string(c.line) + ": "));
    CHECK_THAT(m, Catch::Contains(c.shown) && Catch::Contains(c.why) && Catch::Contains("one host name per line"));
    CHECK(m.find('\n') == std::string::npos);
    CHECK(m.find('\x1b') == std::string::npos);
    CHECK(m.find('\r') == std::string::npos);
  }
  // A long line of garbage is shown cut short: the error stays one short line.
  auto r = parse_hostfile(std::string(100000, '\x01'), "/h");
  REQUIRE_FALSE(r);
  CHECK(r.error().message.size() < 600);
  CHECK_THAT(r.error().message, Catch::Contains("...(100000 bytes)..."));
}

TEST_CASE("host_name_problem: RFC 1123 names and IPv4 addresses", "[hostlist]") {
  using ezpz::core::host_name_problem;
  for (const char* ok : {"node1", "x4102c0s0b0n0.hostmgmt.cm.aurora", "a-b", "10.1.2.3", "NID001", "1host", "a.b."}) {
    INFO(ok);
    CHECK_FALSE(host_name_problem(ok));
  }
  for (const char* bad : {"", ".", "a..b", ".a", "-a", "a.-b", "a b", "a:b", "a/b", "a_b", "[::1]", "a.b.."}) {
    INFO(bad);
    CHECK(host_name_problem(bad));
  }
  CHECK_FALSE(host_name_problem(std::string(63, 'a')));
  CHECK(host_name_problem(std::string(64, 'a')));
}

TEST_CASE("short_hostname strips the domain", "[hostlist]") {
  CHECK(ezpz::core::short_hostname("x4102c0s0b0n0.hostmgmt.cm.aurora.alcf.anl.gov") == "x4102c0s0b0n0");
  CHECK(ezpz::core::short_hostname("laptop") == "laptop");
}

TEST_CASE("check_remote_host: only host names reach ssh", "[hostlist]") {
  using ezpz::core::check_remote_host;
  for (const char* ok : {"node1", "x4102c0s0b0n0.hostmgmt.cm.aurora", "a-b", "nid001-hsn0", "10.0.0.1"}) {
    INFO(ok);
    CHECK(check_remote_host(ok));
  }
  for (const char* bad :
       {"", "-oProxyCommand=touch /tmp/x", "-", "a b", "a\nb", "a\tb", "a\x7f", "$(touch${IFS}x)", "a;b", "q'x"}) {
    INFO(bad);
    auto r = check_remote_host(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ezpz::ExitCode::usage);
    CHECK(r.error().message.find_first_of("\n\t\x7f") == std::string::npos);
  }
  CHECK_THAT(check_remote_host("-oProxyCommand=x").error().message, Catch::Contains("starts with '-'"));
}

TEST_CASE("expand_nodelist: every name it makes is a host name", "[hostlist]") {
  for (const char* expr : {"a;b", "n[1-2];x", "$(x)[1-2]", "-o[1-2]", "a..b", "n_[1-2]"}) {
    INFO(expr);
    auto r = expand_nodelist(expr);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ezpz::ExitCode::usage);
    CHECK_THAT(r.error().message, Catch::Contains("is not a host name"));
  }
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
  const std::string domain = std::string(60, 'a') + "." + std::string(60, 'b') + "." + std::string(60, 'c') + ".";
  CHECK(expand_nodelist(domain + std::string(60, 'd') + "[1-3]")->size() == 3);
  CHECK(expand_nodelist(domain + "n[" + std::string(60, '0') + "-2]")->back() ==
        domain + "n" + std::string(59, '0') + "2");
}

TEST_CASE("expand_nodelist: a list that expands too far is refused before a name is made", "[hostlist]") {
  // "nid[001-003]" 2000 times is 3^2000 names of at most 255 characters: ezpz made a million of
  // them (seconds, 30 under asan) before it found out. Counted first, it fails at once.
  std::string repeated;
  for (int i = 0; i < 2000; ++i) {
    repeated += "nid[001-003]";
  }
  for (const auto& expr :
       {std::string("n[0-999999],m[0-999999]"), std::string("a[1-1000]b[1-1001]"), std::string("a[0-999999,0-999999]"),
        std::string("a[1-10],b[0-999999]"), "x[1-2]" + std::string(20, 'y') + "[1-1000][1-1000]"}) {
    INFO(expr);
    auto r = expand_nodelist(expr);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("more than 1000000 hosts"));
  }
  auto t0 = std::chrono::steady_clock::now();
  auto r = expand_nodelist(repeated.substr(0, 12 * 40));  // 3^40 names of 240 characters
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Catch::Contains("more than 1000000 hosts"));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));  // made nothing
  // The message shows a long list cut in its middle: one short line.
  auto long_list = expand_nodelist(repeated);
  REQUIRE_FALSE(long_list);
  CHECK(long_list.error().message.size() < 400);
  CHECK_THAT(long_list.error().message, Catch::Contains("...(24000 bytes)..."));
  // Counted across the comma-separated items.
  CHECK_FALSE(expand_nodelist("a[1-500000],b[1-500001]"));
}
