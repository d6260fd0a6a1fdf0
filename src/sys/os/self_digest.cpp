#include <vector>

#include <nettle/sha2.h>
#include <unistd.h>

#include "core/base/strings.hpp"
#include "sys/os/fd_io.hpp"
#include "sys/os/posix_probe.hpp"

namespace ezpz::sys {

namespace {

/// The SHA-256 (hex) and size of what `fd` reads; empty when it cannot be read.
std::pair<std::string, unsigned long long> digest_of(const OwnedFd& fd) {
  if (!fd.valid()) {
    return {};
  }
  sha256_ctx ctx;
  sha256_init(&ctx);
  std::vector<unsigned char> buf(1 << 20);
  unsigned long long size = 0;
  ssize_t n;
  while ((n = ::read(fd.get(), buf.data(), buf.size())) > 0) {
    sha256_update(&ctx, static_cast<std::size_t>(n), buf.data());
    size += static_cast<unsigned long long>(n);
  }
  if (n < 0) {
    return {};
  }
  unsigned char sum[SHA256_DIGEST_SIZE];
  sha256_digest(&ctx, sizeof(sum), sum);
  return {core::to_hex(sum, sizeof(sum)), size};
}

}  // namespace

std::pair<std::string, unsigned long long> PosixProbe::self_digest() const {
  return digest_of(open_self_owned());
}

std::string PosixProbe::file_digest(const std::string& path) const {
  return digest_of(OwnedFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK))).first;
}

}  // namespace ezpz::sys
