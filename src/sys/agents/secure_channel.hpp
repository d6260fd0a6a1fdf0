// One connection of the launcher transport, sealed: both ends prove they hold the run's secret
// before anything else is read or sent, then every record is authenticated (AES-256-GCM,
// libcrypto) under keys of this connection alone, with its sequence number in the nonce (a
// replayed, reordered, cut or altered record fails), and encrypted unless the client asked for
// authentication only (--no-encrypt: the data goes in the clear, its tag still covers it).
//
// Handshake: client "EZPZAGT1" flags(1) nonce_c(32); server nonce_s(32) proof_s(32); client
// proof_c(32), where proof_x = HMAC-SHA256(secret, label_x | flags | nonce_c | nonce_s) and the
// keys are HMAC-SHA256(secret, "c2s"/"s2c" | nonce_c | nonce_s).
// Record: length n (4 bytes, big-endian), n sealed bytes (a type byte, then data), a 16-byte tag.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sys/agents/aes_gcm.hpp"
#include "sys/os/fd_io.hpp"

namespace ezpz::sys {

using Secret = std::array<unsigned char, 32>;

/// 32 bytes from libcrypto's generator.
[[nodiscard]] std::optional<Secret> new_secret();
[[nodiscard]] std::string secret_hex(const Secret& secret);
[[nodiscard]] std::optional<Secret> secret_from_hex(std::string_view hex);

/// The most data one record carries.
inline constexpr std::size_t kMaxRecord = 256 * 1024;

/// What opening one direction's records takes: to hand the reading of a socket to another
/// process (the command an agent or `__ssh-tcp` starts reads its stream itself).
struct ReceiveKeys {
  CipherKey key{};
  std::uint64_t seq = 0;  ///< the sequence number of the next record
  bool encrypt = true;
  static constexpr std::size_t kSize = 32 + 8 + 1;
  [[nodiscard]] std::array<unsigned char, kSize> bytes() const;
  [[nodiscard]] static ReceiveKeys from(const std::array<unsigned char, kSize>& b);
};

class SecureChannel {
 public:
  enum class Role { client, server };
  /// What the records carry: encrypted and authenticated, or authenticated in the clear (faster on
  /// a trusted network: --no-encrypt). The client's choice holds for both ends.
  enum class Sealing { encrypt, authenticate };
  /// Run the handshake on the connected socket `fd` within `timeout_ms`; nullopt, with `why`,
  /// when the peer does not prove it holds `secret` (or is too slow, or is not ezpz). The
  /// client's `sealing` decides for both ends (the server's is ignored).
  static std::optional<SecureChannel> open(OwnedFd fd, Role role, const Secret& secret, Sealing sealing, int timeout_ms,
                                           std::string& why);

  /// A channel that only opens the records arriving on `fd` (another process holds the sending
  /// half); its send() fails.
  static SecureChannel receiver(OwnedFd fd, const ReceiveKeys& keys);

  class Accepting;
  class Dialing;

  SecureChannel(SecureChannel&&) noexcept;
  SecureChannel& operator=(SecureChannel&&) noexcept;
  ~SecureChannel();

  [[nodiscard]] int fd() const;
  [[nodiscard]] bool encrypted() const;

  /// Seal `data` (at most kMaxRecord bytes) as one record of `type` and write it whole
  /// (waiting for the socket to take it); false once the connection is broken.
  bool send(char type, std::string_view data);

  enum class Got { record, need_more, closed, forged };
  /// Read what the socket has now (it is non-blocking) into the buffer: need_more (nothing
  /// more yet), closed (end of stream or error), or record when one is already buffered.
  Got fill();
  /// The next whole record from the buffer, opened: record (type and data set), need_more
  /// (incomplete), or forged (a bad tag or length: the connection is done).
  Got next(char& type, std::string& data);
  /// next(), opened in place: `data` stays valid until the next call of fill() or next*().
  Got next_view(char& type, std::string_view& data);
  /// Bytes read and not yet opened (at most about two records: the buffer is compacted).
  [[nodiscard]] std::size_t buffered() const;
  /// The receiving direction's keys, for receiver() in another process; nullopt once bytes
  /// past the handshake were read here (they would be lost to it).
  [[nodiscard]] std::optional<ReceiveKeys> receive_keys() const;
  /// Wait up to `timeout_ms` for the next record; false when none came (closed, forged, late).
  bool await(char& type, std::string& data, int timeout_ms);
  /// await(), reading no byte past that record: what follows stays in the socket (for a
  /// receiver that receive_keys() then hands it to).
  bool await_one(char& type, std::string& data, int timeout_ms);

 private:
  struct State;
  explicit SecureChannel(std::unique_ptr<State> state);
  /// The channel both ends make once the handshake is done: its keys from the two nonces.
  static SecureChannel keyed(OwnedFd fd, Role role, const Secret& secret, unsigned char flags, const unsigned char* nc,
                             const unsigned char* ns);
  std::unique_ptr<State> s_;
};

/// The server's half of the handshake a step at a time, on a non-blocking socket: for a listener
/// that serves many clients at once (a launch's rank hub), none of them held up by one that is
/// slow, silent or a stranger. open() as a server is this, waited for.
class SecureChannel::Accepting {
 public:
  Accepting(OwnedFd fd, const Secret& secret);
  enum class Step { pending, done, failed };
  /// Read what the socket has now and go as far as it allows: pending (poll fd() for more), done
  /// (take() the channel), failed (why() says why).
  Step step();
  [[nodiscard]] int fd() const { return fd_.get(); }
  /// Whether the client's hello has come whole (a peer that never sends one is not ezpz).
  [[nodiscard]] bool heard_hello() const { return hello_got_ == hello_.size(); }
  [[nodiscard]] const std::string& why() const { return why_; }
  /// The open channel, once step() said done.
  SecureChannel take();

 private:
  Step fail(const char* why);
  OwnedFd fd_;
  Secret secret_;
  std::array<unsigned char, 8 + 1 + 32> hello_{};  ///< "EZPZAGT1", flags, the client's nonce
  std::size_t hello_got_ = 0;
  std::array<unsigned char, 32> nonce_{};  ///< ours
  std::array<unsigned char, 32> proof_{};  ///< the client's
  std::size_t proof_got_ = 0;
  std::string why_;
};

/// The client's half of the handshake, begun early: its hello can go before the caller does
/// other work (a shim starting its rank), the server's answer on its way meanwhile. open() as
/// a client is this, finished at once.
class SecureChannel::Dialing {
 public:
  /// `fd`: a TCP connection, made or still being made. Not ok() when no random bytes could be had.
  Dialing(OwnedFd fd, const Secret& secret, Sealing sealing);
  [[nodiscard]] bool ok() const { return ok_; }
  [[nodiscard]] int fd() const { return fd_.get(); }
  /// Send the hello, or as much as the (connected) socket takes now without waiting.
  void send_hello_now();
  /// The rest of the handshake within `timeout_ms`: the hello if not sent yet, the server's
  /// proof, ours. nullopt, with `why`, as open() says.
  std::optional<SecureChannel> finish(int timeout_ms, std::string& why);

 private:
  OwnedFd fd_;
  Secret secret_;
  std::array<unsigned char, 8 + 1 + 32> hello_{};  ///< "EZPZAGT1", flags, our nonce
  std::size_t hello_sent_ = 0;
  bool ok_ = false;
};

}  // namespace ezpz::sys
