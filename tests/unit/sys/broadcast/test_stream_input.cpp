// A relay's stream when the node half that started it handed over the sealed connection: read
// in any pieces across records, to the sender's end; a record that fails its tag ends it and
// says so; without its keys there is no stream; a silent sender is a timeout, not an end.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <unistd.h>

#include "sys/broadcast/stream_input.hpp"
#include "unit/sys/agents/channel_pair.hpp"

using ezpz::sys::ReadResult;
using ezpz::sys::StreamInput;

namespace {

/// A pipe holding `keys`' 41 bytes, its write end closed: the read end, as a relay gets it.
int keys_pipe(const ezpz::sys::SecureChannel& server) {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  const auto keys = server.receive_keys();
  REQUIRE(keys);
  const auto b = keys->bytes();
  REQUIRE(::write(p[1], b.data(), b.size()) == static_cast<ssize_t>(b.size()));
  ::close(p[1]);
  return p[0];
}

std::string read_text(StreamInput& in, std::size_t n, ReadResult want = ReadResult::ok) {
  std::string s(n, '\0');
  REQUIRE(in.read(s.data(), n, 5000) == want);
  return s;
}

}  // namespace

TEST_CASE("stream input: a sealed stream read in any pieces across records, to its end", "[stream_input]") {
  auto p = ezpz::test::connect_pair(ezpz::test::filled_secret(3), ezpz::test::filled_secret(3), true);
  REQUIRE(p.server);
  StreamInput in(keys_pipe(*p.server), p.server->fd());
  std::string sent;
  std::vector<std::string> pieces;
  for (std::size_t size : {std::size_t{5}, std::size_t{1}, ezpz::sys::kMaxRecord, std::size_t{70000}}) {
    pieces.emplace_back(size, static_cast<char>('a' + pieces.size()));
    sent += pieces.back();
  }
  auto sender = std::async(std::launch::async, [&] {  // more than the socket holds: read meanwhile
    bool ok = true;
    for (const auto& piece : pieces) {
      ok = ok && p.client->send('D', piece);
    }
    return ok && p.client->send('E', {});
  });
  CHECK(read_text(in, 3) == sent.substr(0, 3));  // inside a record
  CHECK(read_text(in, 4) == sent.substr(3, 4));  // across two
  CHECK(read_text(in, sent.size() - 7) == sent.substr(7));
  char c = 0;
  CHECK(in.read(&c, 1, 5000) == ReadResult::ended);  // the sender's end
  CHECK(in.why().empty());
  CHECK(sender.get());
}

TEST_CASE("stream input: a record that fails its authentication ends the stream and says so", "[stream_input]") {
  auto p = ezpz::test::connect_pair(ezpz::test::filled_secret(4), ezpz::test::filled_secret(4), true);
  REQUIRE(p.server);
  StreamInput in(keys_pipe(*p.server), p.server->fd());
  REQUIRE(p.client->send('D', "good"));
  std::string forged = {0, 0, 0, 9, 'D', 'b', 'a', 'd', 'b', 'y', 't', 'e', 's'};
  forged += std::string(16, '\x55');  // a tag nobody computed
  REQUIRE(::send(p.client->fd(), forged.data(), forged.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(forged.size()));
  CHECK(read_text(in, 4) == "good");
  char c = 0;
  CHECK(in.read(&c, 1, 5000) == ReadResult::ended);
  CHECK_THAT(in.why(), Catch::Contains("failed its authentication"));
}

TEST_CASE("stream input: without its keys there is no stream, and a silent sender is a timeout", "[stream_input]") {
  auto p = ezpz::test::connect_pair(ezpz::test::filled_secret(5), ezpz::test::filled_secret(5), true);
  REQUIRE(p.server);
  SECTION("the keys never came") {
    int k[2];
    REQUIRE(::pipe(k) == 0);
    ::close(k[1]);
    StreamInput in(k[0], p.server->fd());
    char c = 0;
    CHECK(in.read(&c, 1, 1000) == ReadResult::ended);
    CHECK_THAT(in.why(), Catch::Contains("did not hand over"));
  }
  SECTION("nothing arrives") {
    StreamInput in(keys_pipe(*p.server), p.server->fd());
    char c = 0;
    CHECK(in.read(&c, 1, 50) == ReadResult::timed_out);
    REQUIRE(p.client->send('D', "x"));  // and later it does
    CHECK(in.read(&c, 1, 5000) == ReadResult::ok);
    CHECK(c == 'x');
  }
  SECTION("the sender closes without its end record") {
    StreamInput in(keys_pipe(*p.server), p.server->fd());
    REQUIRE(p.client->send('D', "last"));
    p.client.reset();
    CHECK(read_text(in, 4) == "last");
    char c = 0;
    CHECK(in.read(&c, 1, 5000) == ReadResult::ended);
    CHECK(in.why().empty());
  }
}

namespace {
extern "C" void note_signal(int /*signo*/) {}
}  // namespace

TEST_CASE("stream input: a signal that sets the stop flag ends a wait for a silent sender", "[stream_input]") {
  auto p = ezpz::test::connect_pair(ezpz::test::filled_secret(6), ezpz::test::filled_secret(6), true);
  REQUIRE(p.server);
  struct sigaction sa {};
  sa.sa_handler = note_signal;  // no SA_RESTART, as the relay's stop signals
  struct sigaction old {};
  REQUIRE(::sigaction(SIGUSR2, &sa, &old) == 0);
  std::atomic<bool> stop{false};
  StreamInput in(keys_pipe(*p.server), p.server->fd(), &stop);
  const pthread_t reader = ::pthread_self();
  std::thread signaller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::pthread_kill(reader, SIGUSR2);  // not a stop: the wait goes on
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop = true;
    ::pthread_kill(reader, SIGUSR2);
  });
  char c = 0;
  const auto start = std::chrono::steady_clock::now();
  CHECK(in.read(&c, 1, 60000) == ReadResult::ended);  // the parent's silence limit is far off
  const auto waited = std::chrono::steady_clock::now() - start;
  signaller.join();
  CHECK(waited >= std::chrono::milliseconds(390));
  CHECK(waited < std::chrono::seconds(30));
  ::sigaction(SIGUSR2, &old, nullptr);
}
