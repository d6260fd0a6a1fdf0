// AES-256-GCM for one direction of a sealed channel, and HMAC-SHA256, both cheap to start.
//
// libcrypto's EVP interface costs a process about 1.5 ms before its first record (its provider
// builds a table of every cipher and digest), which every rank's shim paid for a handful of
// small records. The first kQuickBytes of a direction go through libcrypto's low-level AES and
// GCM (CRYPTO_gcm128: nothing to build, about 60 MB/s); past them, EVP's AES-NI (about 3 GB/s)
// takes over. Both compute the same AES-256-GCM, so each end chooses on its own and the records
// on the wire are identical.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace ezpz::sys {

using CipherKey = std::array<unsigned char, 32>;
using GcmIv = std::array<unsigned char, 12>;
inline constexpr std::size_t kGcmTag = 16;
/// Bytes a direction seals or opens with the low-level code before EVP is set up (about what
/// the low-level code does in the time EVP takes to start).
inline constexpr std::uint64_t kQuickBytes = 64 * 1024;

/// libcrypto set up (once) without the system's openssl.cnf: before any EVP call or RAND_bytes
/// (the low-level code needs none of it, so a channel that never reaches kQuickBytes, a rank's
/// shim, never pays it).
void init_libcrypto();

/// HMAC-SHA256 of `message` under `key` (low-level SHA-256: no provider to start).
[[nodiscard]] CipherKey hmac_sha256(const unsigned char* key, std::size_t key_size, std::string_view message);

class AesGcm {
 public:
  /// `quick_bytes`: how many bytes go through the low-level code (tests set 0 or "all").
  explicit AesGcm(const CipherKey& key, std::uint64_t quick_bytes = kQuickBytes);
  AesGcm(const AesGcm&) = delete;
  AesGcm& operator=(const AesGcm&) = delete;
  ~AesGcm();

  /// Authenticate `aad` (`aad_size` bytes), encrypt `size` bytes of `in` into `out` (which may
  /// be `in`), and write the tag; false when libcrypto fails.
  bool seal(const GcmIv& iv, const unsigned char* aad, std::size_t aad_size, const unsigned char* in,
            unsigned char* out, std::size_t size, unsigned char* tag);
  /// The inverse: false when the tag does not match (nothing of `out` may then be used).
  bool open(const GcmIv& iv, const unsigned char* aad, std::size_t aad_size, const unsigned char* in,
            unsigned char* out, std::size_t size, const unsigned char* tag);
  /// Whether EVP has taken over (for tests).
  [[nodiscard]] bool using_evp() const;

 private:
  bool use_evp(std::size_t size);
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace ezpz::sys
