#include <catch2/catch.hpp>

#include "core/base/strings.hpp"

using ezpz::core::printable;

TEST_CASE("printable: plain and UTF-8 text is kept", "[strings]") {
  CHECK(printable("lib/python3.11/site-packages") == "lib/python3.11/site-packages");
  CHECK(printable("caf\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x98\x80") == "caf\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x98\x80");
  CHECK(printable("") == "");
}

TEST_CASE("printable: control bytes, ESC and backslashes are escaped", "[strings]") {
  CHECK(printable("a\x1b[2Jb") == "a\\x1b[2Jb");
  CHECK(printable("x\ny\tz\r") == "x\\ny\\tz\\r");
  CHECK(printable(std::string("n\0ul", 4)) == "n\\x00ul");
  CHECK(printable("\x7f") == "\\x7f");
  CHECK(printable("a\\x1b") == "a\\\\x1b");  // a literal backslash cannot fake an escape
  CHECK(printable("\xc2\x9b"
                  "31m") == "\\xc2\\x9b31m");  // C1 CSI
}

TEST_CASE("excerpt: a long text is cut in its middle, its size said, escapes kept", "[strings]") {
  using ezpz::core::excerpt;
  CHECK(excerpt("nid[001-003]") == "nid[001-003]");
  CHECK(excerpt(std::string(200, 'a')) == std::string(200, 'a'));  // most paths are kept whole
  const auto cut = excerpt(std::string(120, 'h') + std::string(1000, 'm') + std::string(60, 't'));
  CHECK(cut == std::string(120, 'h') + "...(1180 bytes)..." + std::string(60, 't'));
  CHECK(excerpt(std::string(64, 'h') + std::string(1000, 'm') + std::string(32, 't'), 96) ==
        std::string(64, 'h') + "...(1096 bytes)..." + std::string(32, 't'));
  const auto controls = excerpt(std::string(100000, '\x1b'), 96);
  CHECK(controls.find('\x1b') == std::string::npos);
  CHECK(controls.size() < 420);  // 96 bytes shown, 4 characters each
}

TEST_CASE("printable: invalid UTF-8 is shown as bytes", "[strings]") {
  CHECK(printable("\xff\xfe") == "\\xff\\xfe");
  CHECK(printable("\xc3") == "\\xc3");                             // truncated sequence
  CHECK(printable("\xc0\xaf") == "\\xc0\\xaf");                    // overlong '/'
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");           // surrogate
  CHECK(printable("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
}

TEST_CASE("to_hex: lower case, two digits a byte", "[strings]") {
  const unsigned char bytes[] = {0x00, 0x0f, 0xa5, 0xff};
  CHECK(ezpz::core::to_hex(bytes, sizeof(bytes)) == "000fa5ff");
  CHECK(ezpz::core::to_hex(bytes, 0).empty());
}

TEST_CASE("count_of spells the plural out", "[strings]") {
  using ezpz::core::count_of;
  CHECK(count_of(1, "node") == "1 node");
  CHECK(count_of(2, "node") == "2 nodes");
  CHECK(count_of(0, "file") == "0 files");
  CHECK(count_of(1, "address", "addresses") == "1 address");
  CHECK(count_of(3, "process", "processes") == "3 processes");
}

TEST_CASE("human_bytes: decimal units, one decimal past bytes", "[strings]") {
  using ezpz::core::human_bytes;
  CHECK(human_bytes(0) == "0 B");
  CHECK(human_bytes(999) == "999 B");
  CHECK(human_bytes(1500) == "1.5 KB");
  CHECK(human_bytes(2'300'000'000ULL) == "2.3 GB");
  CHECK(human_bytes(3ULL << 30) == "3.2 GB");  // what doctor says of a 3 GiB venv
  CHECK(human_bytes(5'000'000'000'000'000ULL) == "5.0 PB");
}
