#include <catch2/catch.hpp>

#include <array>
#include <memory>
#include <string>

#include <openssl/evp.h>

#include "core/base/strings.hpp"
#include "scratch_dir.hpp"
#include "sys/os/posix_probe.hpp"

namespace {

/// This file's scratch directories.
struct Scratch : ezpz::test::ScratchDir {
  Scratch() : ScratchDir("signature") {}
};

/// A fresh Ed25519 key: its public half as hex, and `text` signed with it.
struct Signer {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key{nullptr, &EVP_PKEY_free};
  Signer() {
    EVP_PKEY* made = nullptr;
    const std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(
        EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr), &EVP_PKEY_CTX_free);
    REQUIRE(EVP_PKEY_keygen_init(ctx.get()) == 1);
    REQUIRE(EVP_PKEY_keygen(ctx.get(), &made) == 1);
    key.reset(made);
  }
  [[nodiscard]] std::string public_hex() const {
    std::array<unsigned char, 32> raw{};
    std::size_t n = raw.size();
    REQUIRE(EVP_PKEY_get_raw_public_key(key.get(), raw.data(), &n) == 1);
    return ezpz::core::to_hex(raw.data(), n);
  }
  [[nodiscard]] std::string sign(const std::string& text) const {
    std::string sig(64, '\0');
    std::size_t n = sig.size();
    const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    REQUIRE(EVP_DigestSignInit(md.get(), nullptr, nullptr, nullptr, key.get()) == 1);
    REQUIRE(EVP_DigestSign(md.get(), reinterpret_cast<unsigned char*>(sig.data()), &n,
                           reinterpret_cast<const unsigned char*>(text.data()), text.size()) == 1);
    return sig;
  }
};

}  // namespace

TEST_CASE("check_signature: SHA256SUMS signed by the key passes, altered or by another key fails", "[signature]") {
  const Scratch s;
  const Signer release;
  const Signer other;
  const ezpz::sys::PosixProbe probe("");
  const std::string sums = std::string(64, 'a') + "  ezpz-0.1.0-linux-x86_64.tar.gz\n";
  const auto file = s.write("SHA256SUMS", sums);
  const auto sig = s.write("SHA256SUMS.sig", release.sign(sums));
  using ezpz::core::Signature;
  CHECK(probe.check_signature(file, sig, release.public_hex()) == Signature::valid);
  CHECK(probe.check_signature(file, sig, other.public_hex()) == Signature::invalid);
  CHECK(probe.check_signature(file, s.write("other.sig", other.sign(sums)), release.public_hex()) ==
        Signature::invalid);
  auto altered = sums;
  altered[3] = 'b';
  CHECK(probe.check_signature(s.write("altered", altered), sig, release.public_hex()) == Signature::invalid);
  CHECK(probe.check_signature(file, s.write("short.sig", release.sign(sums).substr(0, 63)), release.public_hex()) ==
        Signature::invalid);
  CHECK(probe.check_signature(file, s.write("long.sig", release.sign(sums) + "x"), release.public_hex()) ==
        Signature::invalid);
  CHECK(probe.check_signature(file, sig, "not a key") == Signature::invalid);
  CHECK(probe.check_signature(file, (s.dir / "absent.sig").string(), release.public_hex()) == Signature::unreadable);
  CHECK(probe.check_signature((s.dir / "absent").string(), sig, release.public_hex()) == Signature::unreadable);
}
