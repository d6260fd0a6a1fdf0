#include "sys/agents/secure_channel.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "sys/agents/aes_gcm.hpp"

namespace ezpz::sys {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::string_view kHello = "EZPZAGT1";
constexpr std::size_t kNonce = 32;
constexpr std::size_t kTag = 16;
constexpr unsigned char kFlagEncrypt = 1;

using Key = CipherKey;

Key hmac(const Secret& secret, std::string_view label, unsigned char flags, const unsigned char* nc,
         const unsigned char* ns) {
  std::string msg(label);
  msg += static_cast<char>(flags);
  msg.append(reinterpret_cast<const char*>(nc), kNonce);
  msg.append(reinterpret_cast<const char*>(ns), kNonce);
  return hmac_sha256(secret.data(), secret.size(), msg);
}

/// Read exactly `size` bytes before `deadline` (the socket is non-blocking).
bool read_exact(int fd, unsigned char* out, std::size_t size, Clock::time_point deadline) {
  while (size > 0) {
    const auto n = ::recv(fd, out, size, 0);
    if (n > 0) {
      out += n;
      size -= static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      return false;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) == 0) {
      return false;
    }
  }
  return true;
}

/// Read what the non-blocking socket has now, up to `size` bytes in all (never a byte past
/// them: what follows is the next reader's); false once it is closed or broken.
bool read_more(int fd, unsigned char* out, std::size_t size, std::size_t& got) {
  while (got < size) {
    const auto n = ::recv(fd, out + got, size - got, 0);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return n < 0 && errno == EAGAIN;
    }
  }
  return true;
}

/// Write all of `data`, waiting for the non-blocking socket to take it (no deadline: a stalled
/// peer is the caller's stall timeout to judge).
bool write_whole(int fd, const unsigned char* data, std::size_t size) {
  while (size > 0) {
    const auto n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n > 0) {
      data += n;
      size -= static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && errno != EAGAIN) {
      return false;
    }
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, -1) < 0 && errno != EINTR) {
      return false;
    }
  }
  return true;
}

std::uint32_t get_be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

void put_be32(unsigned char* p, std::uint32_t v) {
  p[0] = static_cast<unsigned char>(v >> 24);
  p[1] = static_cast<unsigned char>(v >> 16);
  p[2] = static_cast<unsigned char>(v >> 8);
  p[3] = static_cast<unsigned char>(v);
}

/// `n` bytes from the kernel's generator (getrandom), libcrypto's where that fails: setting up
/// libcrypto's own generator costs each rank's shim about 0.8 ms before its first byte.
bool random_bytes(unsigned char* p, std::size_t n) {
  std::size_t got = 0;
  while (got < n) {
    const auto r = ::getrandom(p + got, n - got, 0);
    if (r < 0 && errno == EINTR) {
      continue;
    }
    if (r <= 0) {
      init_libcrypto();
      return RAND_bytes(p, static_cast<int>(n)) == 1;
    }
    got += static_cast<std::size_t>(r);
  }
  return true;
}

/// Received bytes: read into, opened in place, compacted (never zero-filled: a stream's
/// worth of memset otherwise).
struct InBuffer {
  std::unique_ptr<unsigned char[]> data;
  std::size_t cap = 0;
  std::size_t size = 0;   ///< bytes held
  std::size_t start = 0;  ///< bytes before this were opened and used

  [[nodiscard]] std::size_t unread() const { return size - start; }
  /// Room for `n` more bytes at data + size.
  unsigned char* room(std::size_t n) {
    if (size + n > cap) {
      cap = std::max(cap * 2, size + n);
      auto bigger = std::make_unique_for_overwrite<unsigned char[]>(cap);
      if (size > 0) {
        std::memcpy(bigger.get(), data.get(), size);
      }
      data = std::move(bigger);
    }
    return data.get() + size;
  }
  void compact() {
    if (start > 0) {
      std::memmove(data.get(), data.get() + start, size - start);
      size -= start;
      start = 0;
    }
  }
};

}  // namespace

std::optional<Secret> new_secret() {
  Secret s{};
  if (!random_bytes(s.data(), s.size())) {
    return std::nullopt;
  }
  return s;
}

std::string secret_hex(const Secret& secret) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : secret) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::optional<Secret> secret_from_hex(std::string_view hex) {
  if (hex.size() != 64) {
    return std::nullopt;
  }
  auto nibble = [](char c) -> int {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
  };
  Secret s{};
  for (std::size_t i = 0; i < s.size(); ++i) {
    const int hi = nibble(hex[2 * i]);
    const int lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return std::nullopt;
    }
    s[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return s;
}

struct SecureChannel::State {
  OwnedFd fd;
  bool encrypt = true;
  std::uint64_t send_seq = 0;
  std::uint64_t recv_seq = 0;
  std::unique_ptr<AesGcm> seal;
  std::unique_ptr<AesGcm> open;
  CipherKey open_key{};            ///< open's key (receive_keys)
  InBuffer in;                     ///< bytes read, not yet opened
  std::vector<unsigned char> out;  ///< a record being sealed

  /// The nonce of record `seq`: 4 zero bytes, then the sequence number (each direction has its own key).
  static GcmIv nonce(std::uint64_t seq) {
    GcmIv iv{};
    for (int i = 0; i < 8; ++i) {
      iv[11 - i] = static_cast<unsigned char>(seq >> (8 * i));
    }
    return iv;
  }
};

SecureChannel::SecureChannel(std::unique_ptr<State> state) : s_(std::move(state)) {}
SecureChannel::SecureChannel(SecureChannel&&) noexcept = default;
SecureChannel& SecureChannel::operator=(SecureChannel&&) noexcept = default;
SecureChannel::~SecureChannel() = default;

int SecureChannel::fd() const {
  return s_->fd.get();
}
bool SecureChannel::encrypted() const {
  return s_->encrypt;
}

std::optional<SecureChannel> SecureChannel::open(OwnedFd fd, Role role, const Secret& secret, Sealing sealing,
                                                 int timeout_ms, std::string& why) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  if (role == Role::server) {  // (Accepting and Dialing make the socket non-blocking)
    Accepting accepting(std::move(fd), secret);
    auto step = accepting.step();
    while (step == Accepting::Step::pending) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd p{accepting.fd(), POLLIN, 0};
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) == 0) {
        why = accepting.heard_hello() ? "the client did not finish the handshake" : "not an ezpz client";
        return std::nullopt;
      }
      step = accepting.step();
    }
    if (step == Accepting::Step::failed) {
      why = accepting.why();
      return std::nullopt;
    }
    return accepting.take();
  }
  Dialing dialing(std::move(fd), secret, sealing);
  if (!dialing.ok()) {
    why = "no random bytes";
    return std::nullopt;
  }
  return dialing.finish(timeout_ms, why);
}

SecureChannel::Dialing::Dialing(OwnedFd fd, const Secret& secret, Sealing sealing)
    : fd_(std::move(fd)), secret_(secret) {
  ::fcntl(fd_.get(), F_SETFL, ::fcntl(fd_.get(), F_GETFL) | O_NONBLOCK);
  std::memcpy(hello_.data(), kHello.data(), 8);
  hello_[8] = sealing == Sealing::encrypt ? kFlagEncrypt : 0;
  ok_ = random_bytes(hello_.data() + 9, kNonce);
}

void SecureChannel::Dialing::send_hello_now() {
  while (ok_ && hello_sent_ < hello_.size()) {
    const auto n = ::send(fd_.get(), hello_.data() + hello_sent_, hello_.size() - hello_sent_, MSG_NOSIGNAL);
    if (n <= 0) {
      return;  // full, or broken: finish() waits, or says why
    }
    hello_sent_ += static_cast<std::size_t>(n);
  }
}

std::optional<SecureChannel> SecureChannel::Dialing::finish(int timeout_ms, std::string& why) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::array<unsigned char, kNonce> ns{};
  std::array<unsigned char, kNonce> proof{};
  const unsigned char flags = hello_[8];
  const unsigned char* nc = hello_.data() + 9;
  if (!ok_ || !write_whole(fd_.get(), hello_.data() + hello_sent_, hello_.size() - hello_sent_) ||
      !read_exact(fd_.get(), ns.data(), ns.size(), deadline) ||
      !read_exact(fd_.get(), proof.data(), proof.size(), deadline)) {
    why = "no handshake from the agent (not an ezpz agent of this run, or gone)";
    return std::nullopt;
  }
  hello_sent_ = hello_.size();
  const auto want = hmac(secret_, "server", flags, nc, ns.data());
  if (CRYPTO_memcmp(want.data(), proof.data(), want.size()) != 0) {
    why = "the agent could not prove it holds this run's secret";
    return std::nullopt;
  }
  const auto mine = hmac(secret_, "client", flags, nc, ns.data());
  if (!write_whole(fd_.get(), mine.data(), mine.size())) {
    why = "the agent closed the connection during the handshake";
    return std::nullopt;
  }
  return keyed(std::move(fd_), Role::client, secret_, flags, nc, ns.data());
}

SecureChannel SecureChannel::keyed(OwnedFd fd, Role role, const Secret& secret, unsigned char flags,
                                   const unsigned char* nc, const unsigned char* ns) {
  const auto c2s = hmac(secret, "c2s", flags, nc, ns);
  const auto s2c = hmac(secret, "s2c", flags, nc, ns);
  auto ch = receiver(std::move(fd), {role == Role::client ? s2c : c2s, 0, (flags & kFlagEncrypt) != 0});
  ch.s_->seal = std::make_unique<AesGcm>(role == Role::client ? c2s : s2c);
  return ch;
}

SecureChannel::Accepting::Accepting(OwnedFd fd, const Secret& secret) : fd_(std::move(fd)), secret_(secret) {
  static_assert(sizeof(nonce_) == kNonce && sizeof(proof_) == kNonce && sizeof(hello_) == 9 + kNonce);
  ::fcntl(fd_.get(), F_SETFL, ::fcntl(fd_.get(), F_GETFL) | O_NONBLOCK);
}

SecureChannel::Accepting::Step SecureChannel::Accepting::fail(const char* why) {
  why_ = why;
  fd_.reset();
  return Step::failed;
}

SecureChannel::Accepting::Step SecureChannel::Accepting::step() {
  if (!fd_.valid()) {
    return Step::failed;
  }
  if (!heard_hello()) {
    if (!read_more(fd_.get(), hello_.data(), hello_.size(), hello_got_)) {
      return fail("not an ezpz client");
    }
    if (!heard_hello()) {
      return Step::pending;
    }
    if (std::memcmp(hello_.data(), kHello.data(), 8) != 0 || (hello_[8] & ~kFlagEncrypt) != 0) {
      return fail("not an ezpz client");
    }
    if (!random_bytes(nonce_.data(), kNonce)) {
      return fail("no random bytes");
    }
    // Our nonce and proof: 64 bytes, which a new connection's send buffer always takes.
    const auto proof = hmac(secret_, "server", hello_[8], hello_.data() + 9, nonce_.data());
    if (!write_whole(fd_.get(), nonce_.data(), nonce_.size()) || !write_whole(fd_.get(), proof.data(), proof.size())) {
      return fail("the client did not finish the handshake");
    }
  }
  if (!read_more(fd_.get(), proof_.data(), proof_.size(), proof_got_)) {
    return fail("the client did not finish the handshake");
  }
  if (proof_got_ < proof_.size()) {
    return Step::pending;
  }
  const auto want = hmac(secret_, "client", hello_[8], hello_.data() + 9, nonce_.data());
  if (CRYPTO_memcmp(want.data(), proof_.data(), want.size()) != 0) {
    return fail("the client could not prove it holds this run's secret");
  }
  return Step::done;
}

SecureChannel SecureChannel::Accepting::take() {
  return keyed(std::move(fd_), Role::server, secret_, hello_[8], hello_.data() + 9, nonce_.data());
}

std::array<unsigned char, ReceiveKeys::kSize> ReceiveKeys::bytes() const {
  std::array<unsigned char, kSize> b{};
  std::memcpy(b.data(), key.data(), key.size());
  for (int i = 0; i < 8; ++i) {
    b[32 + static_cast<std::size_t>(i)] = static_cast<unsigned char>(seq >> (8 * i));
  }
  b[40] = encrypt ? 1 : 0;
  return b;
}

ReceiveKeys ReceiveKeys::from(const std::array<unsigned char, kSize>& b) {
  ReceiveKeys k;
  std::memcpy(k.key.data(), b.data(), k.key.size());
  for (int i = 0; i < 8; ++i) {
    k.seq |= std::uint64_t{b[32 + static_cast<std::size_t>(i)]} << (8 * i);
  }
  k.encrypt = b[40] != 0;
  return k;
}

SecureChannel SecureChannel::receiver(OwnedFd fd, const ReceiveKeys& keys) {
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) | O_NONBLOCK);
  auto st = std::make_unique<State>();
  st->fd = std::move(fd);
  st->encrypt = keys.encrypt;
  st->recv_seq = keys.seq;
  st->open_key = keys.key;
  st->open = std::make_unique<AesGcm>(keys.key);
  return SecureChannel(std::move(st));
}

std::optional<ReceiveKeys> SecureChannel::receive_keys() const {
  if (s_->in.unread() > 0) {
    return std::nullopt;
  }
  return ReceiveKeys{s_->open_key, s_->recv_seq, s_->encrypt};
}

bool SecureChannel::send(char type, std::string_view data) {
  auto& s = *s_;
  if (data.size() > kMaxRecord || !s.seal) {
    return false;
  }
  const auto n = static_cast<std::uint32_t>(1 + data.size());
  s.out.resize(4 + n + kTag);
  unsigned char* p = s.out.data();
  put_be32(p, n);
  p[4] = static_cast<unsigned char>(type);
  if (!data.empty()) {  // an empty view may have no storage at all
    std::memcpy(p + 5, data.data(), data.size());
  }
  const auto iv = State::nonce(s.send_seq++);
  // Encrypted: the length is authenticated, the rest sealed in place; otherwise all of it is
  // authenticated and nothing hidden.
  const std::size_t aad = s.encrypt ? 4 : 4 + n;
  const bool ok = s.seal->seal(iv, p, aad, p + aad, p + aad, 4 + n - aad, p + 4 + n);
  return ok && write_whole(s.fd.get(), p, s.out.size());
}

SecureChannel::Got SecureChannel::fill() {
  auto& s = *s_;
  s.in.compact();  // what was opened goes: the buffer holds at most a record or two
  constexpr std::size_t kChunk = 64 * 1024;
  while (true) {
    // What the buffer has room for, 4 KiB to 64 KiB: a stream's grows to its chunks at once, a
    // shim's records (thousands of them at a launch's hub) keep a small one.
    const std::size_t chunk = std::clamp<std::size_t>(s.in.cap - s.in.size, 4096, kChunk);
    const auto n = ::recv(s.fd.get(), s.in.room(chunk), chunk, 0);  // opened there, in place
    if (n > 0) {
      s.in.size += static_cast<std::size_t>(n);
      if (s.in.unread() >= 4 + 1 + kMaxRecord + kTag) {
        return Got::record;  // a whole record is surely there: open it before reading more
      }
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && errno == EAGAIN) {
      return s.in.unread() > 0 ? Got::record : Got::need_more;
    }
    return Got::closed;
  }
}

SecureChannel::Got SecureChannel::next(char& type, std::string& data) {
  std::string_view view;
  const auto got = next_view(type, view);
  if (got == Got::record) {
    data.assign(view);
  }
  return got;
}

SecureChannel::Got SecureChannel::next_view(char& type, std::string_view& data) {
  auto& s = *s_;
  const std::size_t have = s.in.unread();
  if (have < 4) {
    return Got::need_more;
  }
  unsigned char* p = s.in.data.get() + s.in.start;
  const std::uint32_t n = get_be32(p);
  if (n < 1 || n > 1 + kMaxRecord) {
    return Got::forged;
  }
  if (have < 4 + n + kTag) {
    return Got::need_more;
  }
  const auto iv = State::nonce(s.recv_seq++);
  // Encrypted: the length authenticated, the rest opened in place; otherwise all of it is
  // authenticated and it is used as it came.
  const std::size_t aad = s.encrypt ? 4 : 4 + n;
  if (!s.open->open(iv, p, aad, p + aad, p + aad, 4 + n - aad, p + 4 + n)) {
    return Got::forged;  // nothing of it is used
  }
  s.in.start += 4 + n + kTag;
  type = static_cast<char>(p[4]);
  data = std::string_view(reinterpret_cast<const char*>(p) + 5, n - 1);
  return Got::record;
}

std::size_t SecureChannel::buffered() const {
  return s_->in.unread();
}

bool SecureChannel::await_one(char& type, std::string& data, int timeout_ms) {
  auto& s = *s_;
  if (s.in.unread() > 0) {
    return await(type, data, timeout_ms);  // read past it already
  }
  s.in.compact();
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  unsigned char* p = s.in.room(4);
  if (!read_exact(s.fd.get(), p, 4, deadline)) {
    return false;
  }
  const std::uint32_t n = get_be32(p);
  s.in.size += 4;
  if (n < 1 || n > 1 + kMaxRecord || !read_exact(s.fd.get(), s.in.room(n + kTag), n + kTag, deadline)) {
    return false;
  }
  s.in.size += n + kTag;
  return next(type, data) == Got::record;
}

bool SecureChannel::await(char& type, std::string& data, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const auto got = next(type, data);
    if (got == Got::record) {
      return true;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (got == Got::forged || left <= 0) {
      return false;
    }
    pollfd p{fd(), POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) {
      continue;  // a signal (a shim's rank ending as it calls the hub): not an answer, wait on
    }
    if (ready <= 0) {
      return false;
    }
    if (fill() == Got::closed) {  // a last record may have come with the end
      return next(type, data) == Got::record;
    }
  }
}

}  // namespace ezpz::sys
