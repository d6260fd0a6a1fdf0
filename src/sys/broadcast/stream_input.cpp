#include "sys/broadcast/stream_input.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

namespace ezpz::sys {

StreamInput::StreamInput(int keys_fd, int stream_fd, const std::atomic<bool>* stop) : fd_(stream_fd), stop_(stop) {
  if (keys_fd < 0) {
    return;
  }
  std::array<unsigned char, ReceiveKeys::kSize> b{};
  const bool read = read_within(keys_fd, b.data(), b.size(), 10000) == ReadResult::ok;
  ::close(keys_fd);
  OwnedFd conn(::fcntl(stream_fd, F_DUPFD_CLOEXEC, 3));
  if (!read || !conn.valid()) {
    why_ = "the node half that started this relay did not hand over its connection's keys";
    ended_ = true;
    return;
  }
  sealed_ = SecureChannel::receiver(std::move(conn), ReceiveKeys::from(b));
  const OwnedFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));  // the connection is read through sealed_ alone
  if (null.valid()) {
    ::dup2(null.get(), stream_fd);
  }
}

ReadResult StreamInput::read(void* data, std::size_t size, int timeout_ms) {
  if (!sealed_ && !ended_) {
    return read_within(fd_, data, size, timeout_ms);
  }
  return read_sealed(static_cast<char*>(data), size, timeout_ms);
}

ReadResult StreamInput::read_sealed(char* p, std::size_t size, int timeout_ms) {
  while (size > 0) {
    if (!pending_.empty()) {
      const auto n = std::min(size, pending_.size());
      std::memcpy(p, pending_.data(), n);
      pending_.remove_prefix(n);
      p += n;
      size -= n;
      continue;
    }
    if (ended_) {
      return ReadResult::ended;
    }
    char type = 0;
    std::string_view record;
    const auto got = sealed_->next_view(type, record);
    if (got == SecureChannel::Got::record) {
      pending_ = type == 'D' ? record : std::string_view();
      ended_ = type == 'E';  // the sender's stdin ended
      continue;
    }
    if (got == SecureChannel::Got::forged) {
      why_ = "a record of its stream failed its authentication (altered in flight, or not from this run)";
      ended_ = true;
      continue;
    }
    if (closed_) {  // nothing whole is left
      ended_ = true;
      continue;
    }
    pollfd in{sealed_->fd(), POLLIN, 0};
    const auto since = std::chrono::steady_clock::now();
    int ready;
    while ((ready = ::poll(&in, 1, timeout_ms < 0 ? -1 : ms_left(since, timeout_ms))) < 0 && errno == EINTR) {
      if (stop_ != nullptr && stop_->load()) {
        return ReadResult::ended;  // asked to stop (SIGTERM, SIGINT): no more waiting for the parent
      }
    }
    if (ready == 0) {
      return ReadResult::timed_out;
    }
    if (ready < 0) {
      ended_ = true;
    } else {
      closed_ = sealed_->fill() == SecureChannel::Got::closed;
    }
  }
  return ReadResult::ok;
}

}  // namespace ezpz::sys
