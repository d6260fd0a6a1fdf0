#include "sys/fs/file_delta.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include <fcntl.h>
#include <librsync.h>
#include <nettle/sha2.h>
#include <sys/stat.h>

#include "core/base/strings.hpp"
#include "sys/fs/tree.hpp"
#include "sys/os/fd_io.hpp"

namespace ezpz::sys {
namespace {

struct FileCloser {
  void operator()(FILE* f) const {
    if (f != nullptr) {
      std::fclose(f);
    }
  }
};
using File = std::unique_ptr<FILE, FileCloser>;

/// Where a patch's result goes: the file, and the SHA-256 of what was written to it.
struct HashedOut {
  int fd;
  sha256_ctx sha;
};

/// fopencookie's write: each block hashed, then written whole.
ssize_t write_hashed(void* cookie, const char* data, std::size_t size) {
  auto* out = static_cast<HashedOut*>(cookie);
  sha256_update(&out->sha, size, reinterpret_cast<const std::uint8_t*>(data));
  return write_all(out->fd, data, size) ? static_cast<ssize_t>(size) : -1;
}

/// A regular file opened for reading (never a FIFO, device or symlink), or null.
File read_regular(const std::string& path) {
  auto fd = open_regular(path);
  if (!fd) {
    errno = EINVAL;
    return nullptr;
  }
  File f(::fdopen(fd->get(), "rb"));
  if (f) {
    (void)fd->release();  // the FILE's now
  }
  return f;
}

/// Writes librsync's delta format (what rs_patch_file applies on the nodes): its magic, then
/// commands with 8-byte big-endian arguments (RS_OP_LITERAL_N8, RS_OP_COPY_N8_N8), then RS_OP_END.
class DeltaWriter {
 public:
  explicit DeltaWriter(FILE* out) : out_(out) { put(0x72730236, 4); }
  void copy(unsigned long long from, unsigned long long length) {
    flush_literal();
    byte(0x54);  // RS_OP_COPY_N8_N8
    put(from, 8);
    put(length, 8);
  }
  void literal(const unsigned char* data, std::size_t n) { literal_.append(reinterpret_cast<const char*>(data), n); }
  [[nodiscard]] bool end() {
    flush_literal();
    byte(0);  // RS_OP_END
    return ok_ && std::fflush(out_) == 0;
  }

 private:
  void flush_literal() {
    if (!literal_.empty()) {
      byte(0x44);  // RS_OP_LITERAL_N8
      put(literal_.size(), 8);
      ok_ = ok_ && std::fwrite(literal_.data(), 1, literal_.size(), out_) == literal_.size();
      literal_.clear();
    }
  }
  void byte(unsigned char b) { ok_ = ok_ && std::fputc(b, out_) != EOF; }
  void put(unsigned long long v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) {
      byte(static_cast<unsigned char>(v >> (8 * i)));
    }
  }
  FILE* out_;
  std::string literal_;
  bool ok_ = true;
};

/// A delta by comparing the two files block by block, both being here: what an edit in place
/// or an append makes, at the cost of reading them (librsync's signature and rolling search
/// cost ~10x more). Nullopt when more than an eighth of the new file differs: content that
/// moved, which librsync finds.
Expected<std::optional<unsigned long long>> block_delta(const std::string& old_path, const std::string& new_path,
                                                        const std::string& delta_path) {
  constexpr std::size_t kBlock = 4096;
  constexpr std::size_t kChunk = std::size_t(1) << 20;
  File old_f = read_regular(old_path);
  File new_f = read_regular(new_path);
  File delta_f(std::fopen(delta_path.c_str(), "wb"));
  if (!old_f || !new_f || !delta_f) {
    return io_error("cannot open files for the delta of", new_path);
  }
  struct stat new_st {};
  if (::fstat(::fileno(new_f.get()), &new_st) != 0) {
    return io_error("cannot stat", new_path);
  }
  const auto budget = static_cast<unsigned long long>(new_st.st_size) / 8;
  DeltaWriter out(delta_f.get());
  static thread_local std::vector<unsigned char> a(kChunk);  // kept: no page faults for each file
  static thread_local std::vector<unsigned char> b(kChunk);
  unsigned long long pos = 0;
  unsigned long long copy_from = 0;
  unsigned long long copying = 0;
  unsigned long long literal = 0;
  while (true) {
    const auto got_new = std::fread(b.data(), 1, kChunk, new_f.get());
    const auto got_old = std::fread(a.data(), 1, kChunk, old_f.get());
    for (std::size_t off = 0; off < got_new; off += kBlock) {
      const auto n = std::min(kBlock, got_new - off);
      if (off + n <= got_old && std::memcmp(a.data() + off, b.data() + off, n) == 0) {
        copy_from = copying == 0 ? pos + off : copy_from;
        copying += n;
        continue;
      }
      if (copying > 0) {
        out.copy(copy_from, copying);
        copying = 0;
      }
      out.literal(b.data() + off, n);
      if ((literal += n) > budget) {
        return std::optional<unsigned long long>();
      }
    }
    pos += got_new;
    if (got_new < kChunk) {
      break;
    }
  }
  if (std::ferror(new_f.get()) != 0 || std::ferror(old_f.get()) != 0) {
    return io_error("cannot read for the delta of", new_path);
  }
  if (copying > 0) {
    out.copy(copy_from, copying);
  }
  if (!out.end()) {
    return io_error("cannot write the delta of", new_path);
  }
  return std::optional<unsigned long long>(static_cast<unsigned long long>(std::ftell(delta_f.get())));
}

}  // namespace

/// By blocks when the file was edited in place or appended to, else librsync's.
Expected<unsigned long long> make_delta(const std::string& old_path, const std::string& new_path,
                                        const std::string& delta_path) {
  EZPZ_TRY_ASSIGN(auto by_blocks, block_delta(old_path, new_path, delta_path));
  if (by_blocks) {
    return *by_blocks;
  }
  File old_f = read_regular(old_path);
  File new_f = read_regular(new_path);
  File sig_f(std::tmpfile());
  File delta_f(std::fopen(delta_path.c_str(), "wb"));
  if (!old_f || !new_f || !sig_f || !delta_f) {
    return io_error("cannot open files for the delta of", new_path);
  }
  rs_stats_t stats;
  // MD4 strong sums (no BLAKE2 in the static binary): every patched file is checked against
  // its SHA-256 in the manifest, so a weak sum can only cost a full copy, never a wrong file.
  if (rs_sig_file(old_f.get(), sig_f.get(), 0, 0, RS_RK_MD4_SIG_MAGIC, &stats) != RS_DONE) {
    return failure("cannot make the librsync signature of " + old_path);
  }
  std::rewind(sig_f.get());
  rs_signature_t* sums = nullptr;
  if (rs_loadsig_file(sig_f.get(), &sums, &stats) != RS_DONE || rs_build_hash_table(sums) != RS_DONE) {
    rs_free_sumset(sums);
    return failure("cannot load the librsync signature of " + old_path);
  }
  const auto r = rs_delta_file(sums, new_f.get(), delta_f.get(), &stats);
  rs_free_sumset(sums);
  if (r != RS_DONE || std::fflush(delta_f.get()) != 0) {
    return failure("cannot make the librsync delta of " + new_path);
  }
  return static_cast<unsigned long long>(std::ftell(delta_f.get()));
}

Expected<std::string> apply_delta(const std::string& basis, const std::string& delta, const std::string& out) {
  File basis_f = read_regular(basis);
  File delta_f = read_regular(delta);
  const OwnedFd out_fd(::open(out.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!basis_f || !delta_f || !out_fd.valid()) {
    return io_error("cannot open files to patch", out);
  }
  // The result hashed as it is written (no second read of it), in large writes: one buffer a
  // thread, kept (a fresh 1 MiB each file costs its page faults).
  HashedOut hashed{out_fd.get(), {}};
  sha256_init(&hashed.sha);
  File out_f(::fopencookie(&hashed, "wb", cookie_io_functions_t{nullptr, &write_hashed, nullptr, nullptr}));
  static thread_local std::vector<char> buffer(std::size_t(1) << 20);
  if (!out_f || std::setvbuf(out_f.get(), buffer.data(), _IOFBF, buffer.size()) != 0) {
    return failure("cannot write " + out);
  }
  rs_stats_t stats;
  const bool patched = rs_patch_file(basis_f.get(), delta_f.get(), out_f.get(), &stats) == RS_DONE;
  if (!patched || std::fclose(out_f.release()) != 0) {
    return failure("cannot apply the librsync delta to " + basis);
  }
  unsigned char sum[SHA256_DIGEST_SIZE];
  sha256_digest(&hashed.sha, sizeof(sum), sum);
  return core::to_hex(sum, sizeof(sum));
}

}  // namespace ezpz::sys
