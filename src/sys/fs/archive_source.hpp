// A tar archive's bytes from a file, decompressed here (gzip, zstd, xz or none) so that the
// compression layer's own check is verified to the end of the file (gzip's CRC-32 and size,
// zstd's frame checksum, xz's check) and, when ARCHIVE.sha256 sits beside it, the file's
// SHA-256 too: one read, hashed while it is extracted. libarchive then sees plain tar.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/base/expected.hpp"
#include "core/yeet/transfer.hpp"
#include "sys/os/fd_io.hpp"

namespace ezpz::sys {

using SourceChecks = core::ArchiveChecks;

class ArchiveSourceFile {
 public:
  /// Open `path` (a regular file, never a FIFO or device) and ARCHIVE.sha256 when present.
  static Expected<std::unique_ptr<ArchiveSourceFile>> open(const std::string& path);
  ~ArchiveSourceFile();
  ArchiveSourceFile(const ArchiveSourceFile&) = delete;
  ArchiveSourceFile& operator=(const ArchiveSourceFile&) = delete;

  /// The next decompressed bytes; empty at the end; nullopt on an error (error() says which).
  std::optional<std::string_view> next();
  /// Read what is left after the tar end, then check the compression layer's trailers and the
  /// SHA-256: the archive is whole only when this succeeds.
  Expected<void> finish();
  [[nodiscard]] const std::string& error() const { return error_; }
  [[nodiscard]] const SourceChecks& checks() const { return checks_; }
  /// Compressed bytes read so far (for progress).
  [[nodiscard]] unsigned long long raw_read() const { return raw_read_.load(std::memory_order_relaxed); }

  class Decoder;

 private:
  struct Chunk {
    std::unique_ptr<char[]> data;
    std::size_t size = 0;
  };
  ArchiveSourceFile(std::string path, OwnedFd fd);
  bool fill();  ///< read more raw bytes; false at the end of the file or on an error
  /// Decode the next bytes into `out`: how many, 0 at the end, nullopt on an error (error_).
  std::optional<std::size_t> produce(char* out, std::size_t cap);
  void work();  ///< the reader thread: produce() into spare chunks until the end

  std::string path_;
  OwnedFd fd_;
  std::unique_ptr<Decoder> decoder_;
  class Hasher;
  std::unique_ptr<Hasher> sha_;
  std::string expected_sha_;  ///< hex, from ARCHIVE.sha256
  std::string raw_;           ///< raw bytes read and not yet decoded: [raw_pos_, raw_len_)
  std::size_t raw_pos_ = 0;
  std::size_t raw_len_ = 0;
  bool raw_eof_ = false;
  std::atomic<unsigned long long> raw_read_ = 0;
  std::string error_;  ///< written by the reader before done_, read after
  SourceChecks checks_;
  // Chunks between the reader thread and next(), under mutex_.
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Chunk> ready_;
  std::vector<Chunk> spare_;
  Chunk current_;  ///< what next() returned last: the caller reads it until the next call
  bool done_ = false;
  bool failed_ = false;
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace ezpz::sys
