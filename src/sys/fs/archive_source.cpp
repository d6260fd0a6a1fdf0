#include "sys/fs/archive_source.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <lzma.h>
#include <nettle/sha2.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "core/base/strings.hpp"
#include "sys/os/fd_io.hpp"

namespace ezpz::sys {

/// One compression format: raw bytes in, archive bytes out, its check verified.
class ArchiveSourceFile::Decoder {
 public:
  enum class Step { ok, ended, error };
  virtual ~Decoder() = default;
  Decoder() = default;
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;
  /// Decode from `in` (`last`: nothing follows it) into `out`; `used` and `made` say how much.
  virtual Step decode(const char* in, std::size_t len, bool last, std::size_t& used, char* out, std::size_t cap,
                      std::size_t& made) = 0;
  /// Whether the stream ended where a stream may end (not inside a member or frame).
  [[nodiscard]] virtual bool complete() const = 0;
  std::string error;
};

namespace {

constexpr std::size_t kChunk = 1 << 20;
constexpr std::size_t kChunks = 4;  ///< decoded chunks in flight

class GzipDecoder final : public ArchiveSourceFile::Decoder {
 public:
  GzipDecoder() { ok_ = inflateInit2(&z_, 16 + MAX_WBITS) == Z_OK; }
  ~GzipDecoder() override { inflateEnd(&z_); }
  Step decode(const char* in, std::size_t len, bool /*last*/, std::size_t& used, char* out, std::size_t cap,
              std::size_t& made) override {
    used = made = 0;
    if (!ok_) {
      error = "cannot start zlib";
      return Step::error;
    }
    if (!in_member_) {
      // Between members: another member, or NUL padding; anything else is not gzip.
      while (used < len && in[used] == '\0') {
        ++used;
      }
      if (used == len) {
        return Step::ok;
      }
      if (static_cast<unsigned char>(in[used]) != 0x1f) {
        error = "bytes that are not gzip follow its gzip data";
        return Step::error;
      }
      inflateReset(&z_);
      in_member_ = true;
    }
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in + used));
    z_.avail_in = static_cast<uInt>(len - used);
    z_.next_out = reinterpret_cast<Bytef*>(out);
    z_.avail_out = static_cast<uInt>(cap);
    const int r = inflate(&z_, Z_NO_FLUSH);
    used = len - z_.avail_in;
    made = cap - z_.avail_out;
    if (r == Z_STREAM_END) {
      in_member_ = false;
      members_ = true;
      return Step::ok;
    }
    if (r == Z_OK || r == Z_BUF_ERROR) {
      return Step::ok;
    }
    const std::string msg = z_.msg != nullptr ? z_.msg : "zlib error " + std::to_string(r);
    error = msg == "incorrect data check"     ? "its gzip CRC-32 does not match the data"
            : msg == "incorrect length check" ? "its gzip size trailer does not match the data"
                                              : "its gzip data is corrupt (" + msg + ")";
    return Step::error;
  }
  [[nodiscard]] bool complete() const override { return members_ && !in_member_; }

 private:
  z_stream z_{};
  bool ok_ = false;
  bool in_member_ = false;
  bool members_ = false;
};

class ZstdDecoder final : public ArchiveSourceFile::Decoder {
 public:
  ZstdDecoder() : d_(ZSTD_createDCtx()) {}
  ~ZstdDecoder() override { ZSTD_freeDCtx(d_); }
  Step decode(const char* in, std::size_t len, bool /*last*/, std::size_t& used, char* out, std::size_t cap,
              std::size_t& made) override {
    seen_header_ = seen_header_ || len > 0;
    ZSTD_inBuffer src{in, len, 0};
    ZSTD_outBuffer dst{out, cap, 0};
    const std::size_t r = ZSTD_decompressStream(d_, &dst, &src);
    used = src.pos;
    made = dst.pos;
    if (ZSTD_isError(r) != 0U) {
      error = ZSTD_getErrorCode(r) == ZSTD_error_checksum_wrong
                  ? "its zstd frame checksum does not match the data"
                  : std::string("its zstd data is corrupt (") + ZSTD_getErrorName(r) + ")";
      return Step::error;
    }
    if (used > 0 || made > 0) {
      frame_done_ = r == 0;
    }
    return Step::ok;
  }
  [[nodiscard]] bool complete() const override { return seen_header_ && frame_done_; }

 private:
  ZSTD_DCtx* d_;
  bool seen_header_ = false;
  bool frame_done_ = false;
};

class XzDecoder final : public ArchiveSourceFile::Decoder {
 public:
  XzDecoder() {
    ok_ = lzma_stream_decoder(&s_, UINT64_MAX, LZMA_CONCATENATED | LZMA_TELL_NO_CHECK | LZMA_TELL_UNSUPPORTED_CHECK) ==
          LZMA_OK;
  }
  ~XzDecoder() override { lzma_end(&s_); }
  Step decode(const char* in, std::size_t len, bool last, std::size_t& used, char* out, std::size_t cap,
              std::size_t& made) override {
    used = made = 0;
    if (!ok_) {
      error = "cannot start the xz decoder";
      return Step::error;
    }
    if (ended_) {
      return Step::ended;
    }
    s_.next_in = reinterpret_cast<const std::uint8_t*>(in);
    s_.avail_in = len;
    s_.next_out = reinterpret_cast<std::uint8_t*>(out);
    s_.avail_out = cap;
    lzma_ret r = lzma_code(&s_, last ? LZMA_FINISH : LZMA_RUN);
    used = len - s_.avail_in;
    made = cap - s_.avail_out;
    if (r == LZMA_NO_CHECK) {
      return Step::ok;  // said once (the stream header, seen at open); decoding goes on
    }
    if (r == LZMA_STREAM_END) {
      ended_ = true;
      return made > 0 ? Step::ok : Step::ended;
    }
    if (r == LZMA_OK || (r == LZMA_BUF_ERROR && !last)) {
      return Step::ok;
    }
    error = r == LZMA_UNSUPPORTED_CHECK
                ? "its xz check is of a kind this build cannot verify: repack it with xz -C crc64"
            : r == LZMA_DATA_ERROR   ? "its xz data is corrupt or does not match its check"
            : r == LZMA_BUF_ERROR    ? "its xz data ends early"
            : r == LZMA_FORMAT_ERROR ? "its xz data is not in xz format"
                                     : "its xz data cannot be decoded (liblzma error " + std::to_string(r) + ")";
    return Step::error;
  }
  [[nodiscard]] bool complete() const override { return ended_; }

 private:
  lzma_stream s_ = LZMA_STREAM_INIT;
  bool ok_ = false;
  bool ended_ = false;
};

/// The hex digest in `text` (sha256sum's "HEX  name" or just HEX), lower case; empty when none.
std::string parse_sha256_line(const std::string& text) {
  std::string hex = text.substr(0, text.find_first_of(" \t\r\n"));
  if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
    return {};
  }
  std::transform(hex.begin(), hex.end(), hex.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return hex;
}

Expected<std::string> read_expected_sha(const std::string& archive) {
  const std::string path = archive + ".sha256";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return std::string();  // no sidecar
  }
  EZPZ_TRY_ASSIGN(auto fd, open_regular(path, Links::follow));
  char buf[512];
  const auto n = ::read(fd.get(), buf, sizeof(buf));
  std::string hex = n > 0 ? parse_sha256_line(std::string(buf, static_cast<std::size_t>(n))) : "";
  if (hex.empty()) {
    return failure(core::printable(path) +
                   " holds no SHA-256 (sha256sum's format: 64 hex digits, then the name): fix or remove it");
  }
  return hex;
}

}  // namespace

/// SHA-256 of the bytes given to update(), taken in a thread of its own (a copy of each chunk
/// is queued; at most kChunks wait), so hashing overlaps reading and decompressing.
class ArchiveSourceFile::Hasher {
 public:
  Hasher() {
    sha256_init(&ctx_);
    for (std::size_t i = 0; i < kChunks; ++i) {
      spare_.emplace_back();
      spare_.back().reserve(kChunk);
    }
    thread_ = std::thread([this] { run(); });
  }
  ~Hasher() { (void)digest(); }
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  void update(const char* data, std::size_t size) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return !spare_.empty(); });
    std::string chunk = std::move(spare_.back());
    spare_.pop_back();
    lock.unlock();
    chunk.assign(data, size);
    lock.lock();
    queue_.push_back(std::move(chunk));
    changed_.notify_all();
  }
  /// The hex digest of everything given (the thread ends first).
  std::string digest() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ended_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) {
      thread_.join();
      unsigned char sum[SHA256_DIGEST_SIZE];
      sha256_digest(&ctx_, sizeof(sum), sum);
      hex_ = core::to_hex(sum, sizeof(sum));
    }
    return hex_;
  }

 private:
  void run() {
    while (true) {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] { return ended_ || !queue_.empty(); });
      if (queue_.empty()) {
        return;  // ended, everything hashed
      }
      std::string chunk = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      sha256_update(&ctx_, chunk.size(), reinterpret_cast<const std::uint8_t*>(chunk.data()));
      lock.lock();
      spare_.push_back(std::move(chunk));
      changed_.notify_all();
    }
  }

  sha256_ctx ctx_{};
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> queue_;
  std::vector<std::string> spare_;
  bool ended_ = false;
  std::string hex_;
  std::thread thread_;
};

ArchiveSourceFile::ArchiveSourceFile(std::string path, OwnedFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}

ArchiveSourceFile::~ArchiveSourceFile() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  if (worker_.joinable()) {
    worker_.join();  // before fd_ closes (a member): the reader thread reads it
  }
}

Expected<std::unique_ptr<ArchiveSourceFile>> ArchiveSourceFile::open(const std::string& path) {
  EZPZ_TRY_ASSIGN(auto expected, read_expected_sha(path));
  // The source may be a link to an archive, never a FIFO.
  EZPZ_TRY_ASSIGN(auto fd, open_regular(path, Links::follow));
  (void)::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  std::unique_ptr<ArchiveSourceFile> src(new ArchiveSourceFile(path, std::move(fd)));
  src->raw_.resize(kChunk);
  if (!expected.empty()) {
    src->expected_sha_ = expected;
    src->sha_ = std::make_unique<Hasher>();
    src->checks_.sha256 = true;
  }
  if (!src->fill()) {
    return failure(src->error_.empty() ? core::printable(path) + " is empty: is it an archive?" : src->error_);
  }
  const auto* b = reinterpret_cast<const unsigned char*>(src->raw_.data());
  const std::size_t n = src->raw_len_;
  if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
    src->decoder_ = std::make_unique<GzipDecoder>();
    src->checks_.compression = "gzip";
  } else if (n >= 4 && ((b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd) ||
                        ((b[0] & 0xF0U) == 0x50 && b[1] == 0x2a && b[2] == 0x4d && b[3] == 0x18))) {  // or skippable
    src->decoder_ = std::make_unique<ZstdDecoder>();
    src->checks_.compression = "zstd";
  } else if (n >= 6 && std::memcmp(b,
                                   "\xfd"
                                   "7zXZ\0",
                                   6) == 0) {
    src->decoder_ = std::make_unique<XzDecoder>();
    src->checks_.compression = "xz";
  } else if ((n >= 3 && std::memcmp(b, "BZh", 3) == 0) || (n >= 4 && std::memcmp(b, "\x04\x22\x4d\x18", 4) == 0)) {
    return failure(core::printable(path) +
                   " is compressed with bzip2 or lz4, which yeet does not read: repack it as .tar.zst (ezpz tar-env)");
  }
  // What the layer checks, from its header: gzip always (CRC-32 and size); zstd when the
  // frame's descriptor sets Content_Checksum_flag; xz unless its stream flags say "None".
  src->checks_.layer_checked = src->checks_.compression == "gzip" ||
                               (src->checks_.compression == "zstd" && b[0] == 0x28 && n >= 5 && (b[4] & 0x04U) != 0) ||
                               (src->checks_.compression == "xz" && n >= 8 &&
                                ((b[7] & 0x0FU) == 1 || (b[7] & 0x0FU) == 4 || (b[7] & 0x0FU) == 10));
  // Reading, hashing and decompressing run in a thread of their own, a few chunks ahead of the
  // extraction (which mostly waits on the filesystem): verifying costs no time of its own.
  for (std::size_t i = 0; i < kChunks; ++i) {
    src->spare_.push_back(Chunk{std::make_unique<char[]>(kChunk), 0});
  }
  src->worker_ = std::thread([s = src.get()] { s->work(); });
  return src;
}

bool ArchiveSourceFile::fill() {
  if (raw_pos_ > 0) {
    std::memmove(raw_.data(), raw_.data() + raw_pos_, raw_len_ - raw_pos_);
    raw_len_ -= raw_pos_;
    raw_pos_ = 0;
  }
  while (!raw_eof_ && raw_len_ < raw_.size()) {
    const auto n = ::read(fd_.get(), raw_.data() + raw_len_, raw_.size() - raw_len_);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      error_ = "cannot read " + core::printable(path_) + ": " + std::strerror(errno);
      return false;
    }
    if (n == 0) {
      raw_eof_ = true;
      break;
    }
    if (sha_) {
      sha_->update(raw_.data() + raw_len_, static_cast<std::size_t>(n));
    }
    raw_len_ += static_cast<std::size_t>(n);
    raw_read_ += static_cast<unsigned long long>(n);
    break;  // hand over what came; the next call reads on
  }
  return raw_len_ > 0;
}

std::optional<std::size_t> ArchiveSourceFile::produce(char* out, std::size_t cap) {
  if (!decoder_) {  // plain tar: the raw bytes themselves
    if (raw_pos_ == raw_len_) {
      raw_pos_ = raw_len_ = 0;
      if (!fill()) {
        return error_.empty() ? std::optional<std::size_t>(0) : std::nullopt;
      }
    }
    const std::size_t n = std::min(cap, raw_len_ - raw_pos_);
    std::memcpy(out, raw_.data() + raw_pos_, n);
    raw_pos_ += n;
    return n;
  }
  while (true) {
    if (raw_pos_ == raw_len_ && !raw_eof_ && !fill() && !error_.empty()) {
      return std::nullopt;
    }
    const bool last = raw_eof_;
    std::size_t used = 0;
    std::size_t made = 0;
    const auto step = decoder_->decode(raw_.data() + raw_pos_, raw_len_ - raw_pos_, last, used, out, cap, made);
    raw_pos_ += used;
    if (step == Decoder::Step::error) {
      error_ = core::printable(path_) + " is damaged: " + decoder_->error;
      return std::nullopt;
    }
    if (made > 0) {
      return made;
    }
    if (used > 0) {
      continue;
    }
    if (raw_eof_ && (raw_pos_ == raw_len_ || step == Decoder::Step::ended)) {
      if (!decoder_->complete() || raw_pos_ != raw_len_) {
        error_ = core::printable(path_) + " is truncated: its " + checks_.compression + " data ends early";
        return std::nullopt;
      }
      return 0;
    }
    const std::size_t buffered = raw_len_ - raw_pos_;
    if (!raw_eof_ && !fill() && !error_.empty()) {  // the decoder needs more than what is buffered
      return std::nullopt;
    }
    if (!raw_eof_ && raw_len_ - raw_pos_ == buffered) {  // nothing more fits, nothing was decoded
      error_ = core::printable(path_) + " cannot be decoded: its " + checks_.compression + " data makes no progress";
      return std::nullopt;
    }
  }
}

void ArchiveSourceFile::work() {
  while (true) {
    Chunk chunk;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] { return stop_ || !spare_.empty(); });
      if (stop_) {
        return;
      }
      chunk = std::move(spare_.back());
      spare_.pop_back();
    }
    const auto made = produce(chunk.data.get(), kChunk);
    std::lock_guard<std::mutex> lock(mutex_);
    if (!made || *made == 0) {
      failed_ = !made;
      done_ = true;
      changed_.notify_all();
      return;
    }
    chunk.size = *made;
    ready_.push_back(std::move(chunk));
    changed_.notify_all();
  }
}

std::optional<std::string_view> ArchiveSourceFile::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (current_.data) {
    spare_.push_back(std::move(current_));
    changed_.notify_all();
  }
  changed_.wait(lock, [this] { return !ready_.empty() || done_; });
  if (ready_.empty()) {
    return failed_ ? std::nullopt : std::optional<std::string_view>(std::string_view());
  }
  current_ = std::move(ready_.front());
  ready_.pop_front();
  return std::string_view(current_.data.get(), current_.size);
}

Expected<void> ArchiveSourceFile::finish() {
  while (true) {
    auto chunk = next();
    if (!chunk) {
      return failure(error_);
    }
    if (chunk->empty()) {
      break;
    }
  }
  worker_.join();  // it has ended (done_): its hash is complete
  if (sha_) {
    if (const auto got = sha_->digest(); got != expected_sha_) {
      return failure(core::printable(path_) + " is damaged: its SHA-256 is " + got.substr(0, 16) + "..., " +
                     core::printable(path_) + ".sha256 says " + expected_sha_.substr(0, 16) + "...");
    }
  }
  return {};
}

}  // namespace ezpz::sys
