// The launcher transport's sealed connection: a peer without the run's secret is refused before
// anything else is read or sent; a replayed, altered or oversized record is refused; the data is
// hidden unless --no-encrypt, and authenticated either way.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sys/agents/aes_gcm.hpp"
#include "sys/agents/secure_channel.hpp"
#include "unit/sys/agents/channel_pair.hpp"

using ezpz::sys::OwnedFd;
using ezpz::sys::SecureChannel;
using Got = SecureChannel::Got;

namespace {

using Pair = ezpz::test::ChannelPair;

ezpz::sys::Secret secret(unsigned char fill) {
  return ezpz::test::filled_secret(fill);
}

Pair connect(const ezpz::sys::Secret& client_secret, const ezpz::sys::Secret& server_secret, bool encrypt) {
  return ezpz::test::connect_pair(client_secret, server_secret, encrypt);
}

/// The raw bytes of everything that arrived on `ch`'s socket so far (taken off the socket).
std::string raw(const SecureChannel& ch) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(ch.fd(), buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

/// Put `bytes` on the wire towards the other end of `ch`, as if `ch`'s peer wrote them.
void inject(const SecureChannel& from, const std::string& bytes) {
  REQUIRE(::send(from.fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
}

/// The next record on `ch`, waiting for it.
Got receive(SecureChannel& ch, char& type, std::string& data) {
  for (int i = 0; i < 100; ++i) {
    const auto got = ch.next(type, data);
    if (got != Got::need_more) {
      return got;
    }
    pollfd p{ch.fd(), POLLIN, 0};
    (void)::poll(&p, 1, 100);
    if (ch.fill() == Got::closed) {
      return Got::closed;
    }
  }
  return Got::need_more;
}

}  // namespace

TEST_CASE("secure channel: both ends with the secret talk, both ways, in order", "[secure_channel]") {
  for (const bool encrypt : {true, false}) {
    auto p = connect(secret(7), secret(7), encrypt);
    REQUIRE(p.client);
    REQUIRE(p.server);
    CHECK(p.server->encrypted() == encrypt);  // the client decides for both
    const std::string big(ezpz::sys::kMaxRecord, 'z');
    // Sent from another thread: a socket pair holds less than the big record.
    auto sent = std::async(std::launch::async, [&] {
      return p.client->send('D', "hello") && p.client->send('D', big) && p.client->send('E', {});
    });
    char type = 0;
    std::string data;
    REQUIRE(receive(*p.server, type, data) == Got::record);
    CHECK((type == 'D' && data == "hello"));
    REQUIRE(receive(*p.server, type, data) == Got::record);
    CHECK((type == 'D' && data == big));
    REQUIRE(receive(*p.server, type, data) == Got::record);
    CHECK((type == 'E' && data.empty()));
    CHECK(sent.get());
    REQUIRE(p.server->send('O', "back"));
    REQUIRE(receive(*p.client, type, data) == Got::record);
    CHECK((type == 'O' && data == "back"));
    CHECK_FALSE(p.client->send('D', std::string(ezpz::sys::kMaxRecord + 1, 'x')));  // one record at most
  }
}

TEST_CASE("secure channel: a peer without the secret is refused at the handshake, both ways", "[secure_channel]") {
  auto p = connect(secret(1), secret(2), true);
  CHECK_FALSE(p.client);
  CHECK_FALSE(p.server);
  CHECK(p.client_why == "the agent could not prove it holds this run's secret");
  CHECK_FALSE(p.server_why.empty());
}

TEST_CASE("secure channel: something that is not an ezpz client is dropped", "[secure_channel]") {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  OwnedFd mine(fds[0]);
  const std::string hello = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(::send(mine.get(), hello.data(), hello.size(), MSG_NOSIGNAL) > 0);
  std::string why;
  auto server = SecureChannel::open(OwnedFd(fds[1]), SecureChannel::Role::server, secret(3),
                                    SecureChannel::Sealing::encrypt, 2000, why);
  CHECK_FALSE(server);
  CHECK(why == "not an ezpz client");
  char c;
  CHECK(::recv(mine.get(), &c, 1, MSG_DONTWAIT) <= 0);  // it said nothing back
}

TEST_CASE("secure channel: a replayed, altered or oversized record is refused", "[secure_channel]") {
  for (const bool encrypt : {true, false}) {
    for (const std::string fault : {"replayed", "altered", "oversized"}) {
      INFO(fault << (encrypt ? ", encrypted" : ", --no-encrypt"));
      auto p = connect(secret(9), secret(9), encrypt);
      REQUIRE(p.client);
      REQUIRE(p.server);
      REQUIRE(p.client->send('D', "pay me 100"));
      const auto record = raw(*p.server);  // taken off the wire
      REQUIRE(record.size() == 4 + 1 + 10 + 16);
      // Hidden when encrypted, in the clear (but still checked) when not.
      CHECK((record.find("pay me 100") != std::string::npos) == !encrypt);
      char type = 0;
      std::string data;
      if (fault == "replayed") {
        inject(*p.client, record);  // delivered once: fine
        REQUIRE(receive(*p.server, type, data) == Got::record);
        CHECK(data == "pay me 100");
        data.clear();
        inject(*p.client, record);  // again: its sequence number is spent
      } else if (fault == "altered") {
        auto bent = record;
        bent[4 + 1 + 7] ^= 0x01;  // one bit of the amount
        inject(*p.client, bent);
      } else {
        inject(*p.client, std::string("\x7f\xff\xff\xff", 4));  // refused before it is read
      }
      CHECK(receive(*p.server, type, data) == Got::forged);
      CHECK(data.empty());
    }
  }
}

TEST_CASE("secure channel: new secrets are random and read back from hex", "[secure_channel]") {
  const auto a = ezpz::sys::new_secret();
  const auto b = ezpz::sys::new_secret();
  REQUIRE(a);
  REQUIRE(b);
  CHECK(*a != *b);
  const auto hex = ezpz::sys::secret_hex(*a);
  CHECK(hex.size() == 64);
  CHECK(ezpz::sys::secret_from_hex(hex) == a);
  CHECK_FALSE(ezpz::sys::secret_from_hex("abc"));
  CHECK_FALSE(ezpz::sys::secret_from_hex(std::string(64, 'g')));
}

TEST_CASE("secure channel: a last record that comes with the end is still read", "[secure_channel]") {
  auto p = connect(secret(5), secret(5), true);
  REQUIRE(p.client);
  REQUIRE(p.server);
  REQUIRE(p.server->send('N', "not a node this run sends to"));
  p.server.reset();  // closed right after: both arrive together
  char type = 0;
  std::string data;
  REQUIRE(p.client->await(type, data, 2000));
  CHECK(type == 'N');
  CHECK(data == "not a node this run sends to");
  CHECK_FALSE(p.client->await(type, data, 200));  // and then nothing
}

namespace {

std::atomic<int> signals_seen{0};
void count_signal(int /*signo*/) {
  signals_seen.fetch_add(1);
}

/// A thread's scheduler state ('S': asleep, as in poll), '?' once it is gone.
char thread_state(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string stat;
  std::getline(f, stat);
  const auto paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? '?' : stat[paren + 2];
}

}  // namespace

TEST_CASE("secure channel: a signal while a record is awaited does not end the wait", "[secure_channel]") {
  // The per-rank shim awaits the hub's answer while its rank may end: SIGCHLD, which must not
  // read as "the hub did not answer".
  auto p = connect(secret(6), secret(6), true);
  REQUIRE(p.client);
  REQUIRE(p.server);
  struct sigaction on {};
  struct sigaction before {};
  on.sa_handler = count_signal;
  on.sa_flags = SA_RESTART;  // as the shim's: poll() is interrupted all the same
  sigemptyset(&on.sa_mask);
  REQUIRE(::sigaction(SIGUSR1, &on, &before) == 0);
  std::atomic<pid_t> tid{0};
  char type = 0;
  std::string data;
  std::promise<bool> got;
  auto answer = got.get_future();
  std::jthread waiter([&] {  // joined however the test ends
    tid = ::gettid();
    got.set_value(p.client->await(type, data, 20000));
  });
  // Asleep in await's poll (nothing else in that thread sleeps).
  const auto started = std::chrono::steady_clock::now();
  while (tid == 0 || thread_state(tid) != 'S') {
    REQUIRE(std::chrono::steady_clock::now() < started + std::chrono::seconds(20));
    REQUIRE(answer.wait_for(std::chrono::milliseconds(1)) == std::future_status::timeout);
  }
  const int seen = signals_seen;
  REQUIRE(::pthread_kill(waiter.native_handle(), SIGUSR1) == 0);
  while (signals_seen == seen) {  // its handler has run: poll() was interrupted
    std::this_thread::yield();
  }
  // Back in poll (the wait goes on), or done: then it took the signal for the end.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (answer.wait_for(std::chrono::milliseconds(1)) == std::future_status::timeout && thread_state(tid) != 'S') {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
  }
  REQUIRE(p.server->send('N', "after the signal"));
  waiter.join();
  ::sigaction(SIGUSR1, &before, nullptr);
  CHECK(answer.get());
  CHECK(type == 'N');
  CHECK(data == "after the signal");
}

TEST_CASE("secure channel: a long stream read in pieces keeps a small buffer", "[secure_channel]") {
  auto p = connect(secret(6), secret(6), false);
  REQUIRE(p.client);
  REQUIRE(p.server);
  const std::string chunk(64 * 1024 + 7, 'q');
  constexpr int kRecords = 400;  // 26 MB: a buffer that kept it all would be caught below
  auto sent = std::async(std::launch::async, [&] {
    bool ok = true;
    for (int i = 0; i < kRecords && ok; ++i) {
      ok = p.client->send('D', chunk);
    }
    return ok;
  });
  int got = 0;
  char type = 0;
  std::string data;
  while (got < kRecords) {
    REQUIRE(receive(*p.server, type, data) == Got::record);
    REQUIRE(data.size() == chunk.size());
    ++got;
  }
  CHECK(sent.get());
  CHECK(p.server->buffered() < 2 * (ezpz::sys::kMaxRecord + 64));
}

namespace {

std::string hex(const unsigned char* p, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 15];
  }
  return out;
}

std::string hmac_hex(const std::string& key, std::string_view message) {
  const auto mac = ezpz::sys::hmac_sha256(reinterpret_cast<const unsigned char*>(key.data()), key.size(), message);
  return hex(mac.data(), mac.size());
}

}  // namespace

TEST_CASE("secure channel: HMAC-SHA256 without a provider gives RFC 4231's values", "[secure_channel]") {
  CHECK(hmac_hex(std::string(20, '\x0b'), "Hi There") ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  CHECK(hmac_hex("Jefe", "what do ya want for nothing?") ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  CHECK(hmac_hex(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First") ==
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST_CASE("secure channel: the quick AES-GCM and EVP's seal the same records, and EVP takes over", "[secure_channel]") {
  using ezpz::sys::AesGcm;
  ezpz::sys::CipherKey key{};
  key.fill(0x5a);
  AesGcm quick(key, std::uint64_t{1} << 40);  // never leaves the low-level code
  AesGcm evp(key, 0);                         // EVP from the first record
  AesGcm mixed(key, 1000);                    // the low-level code for 1000 bytes, then EVP
  std::string record(4 + 700, 'r');
  for (std::uint64_t seq = 0; seq < 4; ++seq) {
    ezpz::sys::GcmIv iv{};
    iv[11] = static_cast<unsigned char>(seq);
    record[5] = static_cast<char>('a' + seq);
    const auto* in = reinterpret_cast<const unsigned char*>(record.data());
    std::string a(record), b(record);
    unsigned char tag_a[16], tag_b[16];
    auto* pa = reinterpret_cast<unsigned char*>(a.data());
    auto* pb = reinterpret_cast<unsigned char*>(b.data());
    REQUIRE(quick.seal(iv, in, 4, in + 4, pa + 4, record.size() - 4, tag_a));
    REQUIRE(evp.seal(iv, in, 4, in + 4, pb + 4, record.size() - 4, tag_b));
    CHECK(a == b);
    CHECK(hex(tag_a, 16) == hex(tag_b, 16));
    CHECK(a.substr(4) != record.substr(4));
    std::string plain(record.size() - 4, '\0');
    auto* out = reinterpret_cast<unsigned char*>(plain.data());
    REQUIRE(mixed.open(iv, pa, 4, pa + 4, out, plain.size(), tag_a));  // crosses 1000 bytes at seq 1
    CHECK(plain == record.substr(4));
    tag_a[0] ^= 1;
    CHECK_FALSE(mixed.open(iv, pa, 4, pa + 4, out, plain.size(), tag_a));
  }
  CHECK_FALSE(quick.using_evp());
  CHECK(evp.using_evp());
  CHECK(mixed.using_evp());
}

TEST_CASE("secure channel: the reading of a connection is handed over with its keys", "[secure_channel]") {
  for (const bool encrypt : {true, false}) {
    auto p = connect(secret(7), secret(7), encrypt);
    REQUIRE(p.client);
    REQUIRE(p.server);
    // Through the wire format: what another process gets on a pipe.
    const auto keys = p.server->receive_keys();
    REQUIRE(keys);
    const auto carried = ezpz::sys::ReceiveKeys::from(keys->bytes());
    CHECK(carried.key == keys->key);
    CHECK(carried.seq == 0);
    CHECK(carried.encrypt == encrypt);
    auto reader = SecureChannel::receiver(OwnedFd(::dup(p.server->fd())), carried);
    auto sent = std::async(std::launch::async, [&] {  // more than the socket holds: read meanwhile
      return p.client->send('D', "first") && p.client->send('D', std::string(ezpz::sys::kMaxRecord, 'x'));
    });
    char type = 0;
    std::string data;
    REQUIRE(receive(reader, type, data) == Got::record);
    CHECK(type == 'D');
    CHECK(data == "first");
    REQUIRE(receive(reader, type, data) == Got::record);
    CHECK(data == std::string(ezpz::sys::kMaxRecord, 'x'));
    CHECK(sent.get());
    CHECK_FALSE(reader.send('O', "a receiver only opens"));
    // The other direction still works from the first channel.
    REQUIRE(p.server->send('O', "back"));
    REQUIRE(receive(*p.client, type, data) == Got::record);
    CHECK(data == "back");
  }
}

TEST_CASE("secure channel: no keys to hand over once records were read", "[secure_channel]") {
  auto p = connect(secret(9), secret(9), true);
  REQUIRE(p.client);
  REQUIRE(p.server);
  REQUIRE(p.client->send('D', "early"));
  pollfd w{p.server->fd(), POLLIN, 0};
  REQUIRE(::poll(&w, 1, 5000) == 1);
  (void)p.server->fill();
  CHECK_FALSE(p.server->receive_keys());  // "early" would be lost to the receiver
  char type = 0;
  std::string data;
  REQUIRE(p.server->next(type, data) == Got::record);
  CHECK(data == "early");
  const auto keys = p.server->receive_keys();  // all of it opened here: the next record is #1
  REQUIRE(keys);
  CHECK(keys->seq == 1);
}

TEST_CASE("secure channel: a request read alone leaves the stream behind it to a receiver", "[secure_channel]") {
  auto p = connect(secret(11), secret(11), true);
  REQUIRE(p.client);
  REQUIRE(p.server);
  REQUIRE(p.client->send('Q', "[\"__yeet-relay\"]"));  // an agent's request, the stream right behind it
  REQUIRE(p.client->send('D', "stream"));
  char type = 0;
  std::string data;
  REQUIRE(p.server->await_one(type, data, 5000));
  CHECK(type == 'Q');
  CHECK(data == "[\"__yeet-relay\"]");
  const auto keys = p.server->receive_keys();
  REQUIRE(keys);
  CHECK(keys->seq == 1);
  auto reader = SecureChannel::receiver(OwnedFd(::dup(p.server->fd())), *keys);
  REQUIRE(receive(reader, type, data) == Got::record);
  CHECK(type == 'D');
  CHECK(data == "stream");
}

TEST_CASE("secure channel: a client's hello goes before it finishes, and the server answers it meanwhile",
          "[secure_channel]") {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  SecureChannel::Dialing dialing{OwnedFd(fds[0]), secret(3), SecureChannel::Sealing::encrypt};
  REQUIRE(dialing.ok());
  dialing.send_hello_now();
  // The server hears the hello and sends its proof while the client does other work.
  SecureChannel::Accepting accepting{OwnedFd(fds[1]), secret(3)};
  CHECK(accepting.step() == SecureChannel::Accepting::Step::pending);
  CHECK(accepting.heard_hello());
  std::string why;
  auto client = dialing.finish(0, why);  // the answer is there already: no waiting
  REQUIRE(client);
  pollfd p{accepting.fd(), POLLIN, 0};
  REQUIRE(::poll(&p, 1, 5000) == 1);
  REQUIRE(accepting.step() == SecureChannel::Accepting::Step::done);
  auto server = accepting.take();
  REQUIRE(client->send('H', "1 node7"));
  char type = 0;
  std::string data;
  REQUIRE(receive(server, type, data) == Got::record);
  CHECK(type == 'H');
  CHECK(data == "1 node7");
}

TEST_CASE("secure channel: a client dialling a server without the secret gets nothing through", "[secure_channel]") {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  SecureChannel::Dialing dialing{OwnedFd(fds[0]), secret(3), SecureChannel::Sealing::encrypt};
  dialing.send_hello_now();
  SecureChannel::Accepting accepting{OwnedFd(fds[1]), secret(4)};
  CHECK(accepting.step() == SecureChannel::Accepting::Step::pending);
  std::string why;
  CHECK_FALSE(dialing.finish(5000, why));
  CHECK_THAT(why, Catch::Contains("could not prove"));
}
