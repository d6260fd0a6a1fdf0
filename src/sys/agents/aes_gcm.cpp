// The low-level interfaces (AES_*, SHA256_*) are deprecated in OpenSSL 3 but kept: they are what
// runs without a provider, which is the point here.
#define OPENSSL_SUPPRESS_DEPRECATED
#include "sys/agents/aes_gcm.hpp"

#include <cstring>

#include <openssl/aes.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/modes.h>
#include <openssl/sha.h>

namespace ezpz::sys {

void init_libcrypto() {
  static const bool done = OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, nullptr) == 1;
  (void)done;
}

CipherKey hmac_sha256(const unsigned char* key, std::size_t key_size, std::string_view message) {
  constexpr std::size_t kBlock = 64;
  std::array<unsigned char, kBlock> block{};
  if (key_size > kBlock) {
    ::SHA256(key, key_size, block.data());
  } else {
    std::memcpy(block.data(), key, key_size);
  }
  std::array<unsigned char, kBlock> pad{};
  // H((K ^ pad) | data): the inner hash with 0x36 over the message, the outer with 0x5c over it.
  auto keyed_hash = [&](unsigned char pad_byte, const void* data, std::size_t size) {
    for (std::size_t i = 0; i < kBlock; ++i) {
      pad[i] = block[i] ^ pad_byte;
    }
    CipherKey digest{};
    SHA256_CTX ctx;
    ::SHA256_Init(&ctx);
    ::SHA256_Update(&ctx, pad.data(), kBlock);
    ::SHA256_Update(&ctx, data, size);
    ::SHA256_Final(digest.data(), &ctx);
    return digest;
  };
  CipherKey inner = keyed_hash(0x36, message.data(), message.size());
  const CipherKey out = keyed_hash(0x5c, inner.data(), inner.size());
  OPENSSL_cleanse(block.data(), block.size());
  OPENSSL_cleanse(pad.data(), pad.size());
  OPENSSL_cleanse(inner.data(), inner.size());
  return out;
}

struct AesGcm::State {
  CipherKey key{};
  std::uint64_t quick_left = 0;
  AES_KEY aes{};
  GCM128_CONTEXT* gcm = nullptr;
  EVP_CIPHER_CTX* evp = nullptr;
  int evp_mode = -1;  ///< what `evp` was set up for: -1 nothing yet, 0 opening, 1 sealing
  ~State() {
    if (gcm != nullptr) {
      CRYPTO_gcm128_release(gcm);
    }
    EVP_CIPHER_CTX_free(evp);
    OPENSSL_cleanse(&aes, sizeof(aes));
    OPENSSL_cleanse(key.data(), key.size());
  }
};

AesGcm::AesGcm(const CipherKey& key, std::uint64_t quick_bytes) : s_(std::make_unique<State>()) {
  s_->key = key;
  s_->quick_left = quick_bytes;
  if (quick_bytes > 0 && ::AES_set_encrypt_key(key.data(), 256, &s_->aes) == 0) {
    s_->gcm = CRYPTO_gcm128_new(&s_->aes, reinterpret_cast<block128_f>(::AES_encrypt));
  }
}

AesGcm::~AesGcm() = default;

bool AesGcm::using_evp() const {
  return s_->evp != nullptr;
}

/// Whether a record of `size` bytes goes through EVP (set up now if it is its first).
bool AesGcm::use_evp(std::size_t size) {
  auto& s = *s_;
  if (s.evp == nullptr && s.gcm != nullptr && s.quick_left >= size) {
    s.quick_left -= size;
    return false;
  }
  if (s.evp == nullptr) {
    init_libcrypto();
    s.evp = EVP_CIPHER_CTX_new();
  }
  return true;
}

bool AesGcm::seal(const GcmIv& iv, const unsigned char* aad, std::size_t aad_size, const unsigned char* in,
                  unsigned char* out, std::size_t size, unsigned char* tag) {
  auto& s = *s_;
  if (!use_evp(aad_size + size)) {
    CRYPTO_gcm128_setiv(s.gcm, iv.data(), iv.size());
    if (CRYPTO_gcm128_aad(s.gcm, aad, aad_size) != 0 || CRYPTO_gcm128_encrypt(s.gcm, in, out, size) != 0) {
      return false;
    }
    CRYPTO_gcm128_tag(s.gcm, tag, kGcmTag);
    return true;
  }
  int len = 0;
  unsigned char none[16];
  const bool first = s.evp_mode != 1;  // the cipher and key only the first time
  s.evp_mode = 1;
  return s.evp != nullptr &&
         EVP_EncryptInit_ex(s.evp, first ? EVP_aes_256_gcm() : nullptr, nullptr, first ? s.key.data() : nullptr,
                            iv.data()) == 1 &&
         (aad_size == 0 || EVP_EncryptUpdate(s.evp, nullptr, &len, aad, static_cast<int>(aad_size)) == 1) &&
         (size == 0 || EVP_EncryptUpdate(s.evp, out, &len, in, static_cast<int>(size)) == 1) &&
         EVP_EncryptFinal_ex(s.evp, none, &len) == 1 &&
         EVP_CIPHER_CTX_ctrl(s.evp, EVP_CTRL_GCM_GET_TAG, kGcmTag, tag) == 1;
}

bool AesGcm::open(const GcmIv& iv, const unsigned char* aad, std::size_t aad_size, const unsigned char* in,
                  unsigned char* out, std::size_t size, const unsigned char* tag) {
  auto& s = *s_;
  if (!use_evp(aad_size + size)) {
    CRYPTO_gcm128_setiv(s.gcm, iv.data(), iv.size());
    return CRYPTO_gcm128_aad(s.gcm, aad, aad_size) == 0 && CRYPTO_gcm128_decrypt(s.gcm, in, out, size) == 0 &&
           CRYPTO_gcm128_finish(s.gcm, tag, kGcmTag) == 0;
  }
  int len = 0;
  unsigned char none[16];
  std::array<unsigned char, kGcmTag> want{};
  std::memcpy(want.data(), tag, kGcmTag);
  const bool first = s.evp_mode != 0;
  s.evp_mode = 0;
  return s.evp != nullptr &&
         EVP_DecryptInit_ex(s.evp, first ? EVP_aes_256_gcm() : nullptr, nullptr, first ? s.key.data() : nullptr,
                            iv.data()) == 1 &&
         EVP_CIPHER_CTX_ctrl(s.evp, EVP_CTRL_GCM_SET_TAG, kGcmTag, want.data()) == 1 &&
         (aad_size == 0 || EVP_DecryptUpdate(s.evp, nullptr, &len, aad, static_cast<int>(aad_size)) == 1) &&
         (size == 0 || EVP_DecryptUpdate(s.evp, out, &len, in, static_cast<int>(size)) == 1) &&
         EVP_DecryptFinal_ex(s.evp, none, &len) == 1;
}

}  // namespace ezpz::sys
