// The stream a relay reads: its stdin as it is (a pipe from the node half that started it, or
// the SSH channel), or the sealed connection its stdin is, when that node half (an agent's
// session, `__ssh-tcp`) handed it over with the receiving keys (sys/agents/session): the
// stream's bytes then reach the relay through no other process and no pipe.
#pragma once

#include <atomic>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "sys/agents/secure_channel.hpp"
#include "sys/os/fd_io.hpp"

namespace ezpz::sys {

class StreamInput {
 public:
  /// `stream_fd` (stdin); sealed when `keys_fd` >= 0: the keys are read from it (it is then
  /// closed) and the connection is read through this alone (`stream_fd` becomes /dev/null).
  /// A signal that sets `stop` ends a sealed read's wait (the stream then ends there).
  explicit StreamInput(int keys_fd, int stream_fd = 0, const std::atomic<bool>* stop = nullptr);

  /// Exactly `size` bytes, waiting at most `timeout_ms` (< 0: no limit) for each next piece.
  ReadResult read(void* data, std::size_t size, int timeout_ms);
  /// Why the sealed stream ended before its end when that was not the peer closing it (a
  /// record that failed its authentication, keys that could not be read); "" otherwise.
  [[nodiscard]] const std::string& why() const { return why_; }

 private:
  ReadResult read_sealed(char* p, std::size_t size, int timeout_ms);

  int fd_;
  const std::atomic<bool>* stop_;
  std::optional<SecureChannel> sealed_;
  std::string_view pending_;  ///< data of the record opened last, not yet read (in sealed_'s buffer)
  bool closed_ = false;       ///< the connection ended: what is buffered is all there is
  bool ended_ = false;
  std::string why_;
};

}  // namespace ezpz::sys
