// Ed25519 signatures checked with libcrypto (already in the binary for libssh): a release's
// SHA256SUMS against the key the build embedded or a site pinned (ezpz self-update).
#include <array>
#include <memory>
#include <string>

#include <openssl/evp.h>

#include "core/base/strings.hpp"
#include "sys/os/posix_probe.hpp"
#include "sys/os/read_text.hpp"

namespace ezpz::sys {

namespace {

constexpr std::size_t kKeyBytes = 32;
constexpr std::size_t kSignatureBytes = 64;
constexpr std::size_t kMaxSigned = std::size_t(1) << 20;

}  // namespace

core::Signature PosixProbe::check_signature(const std::string& file, const std::string& signature_file,
                                            const std::string& key_hex) const {
  auto data = read_whole(file, kMaxSigned);
  auto sig = read_head(signature_file, kSignatureBytes + 1);
  if (!data || !sig) {
    return core::Signature::unreadable;
  }
  std::array<unsigned char, kKeyBytes> key{};
  if (sig->size() != kSignatureBytes || !core::from_hex(key_hex, key.data(), key.size())) {
    return core::Signature::invalid;
  }
  const std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> pkey(
      EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, key.data(), key.size()), &EVP_PKEY_free);
  const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!pkey || !md || EVP_DigestVerifyInit(md.get(), nullptr, nullptr, nullptr, pkey.get()) != 1) {
    return core::Signature::invalid;
  }
  const bool ok = EVP_DigestVerify(md.get(), reinterpret_cast<const unsigned char*>(sig->data()), sig->size(),
                                   reinterpret_cast<const unsigned char*>(data->data()), data->size()) == 1;
  return ok ? core::Signature::valid : core::Signature::invalid;
}

}  // namespace ezpz::sys
