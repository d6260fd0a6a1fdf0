// Owners for what a failure path must not leave behind: a callable run at scope exit
// (ScopeGuard) and a child process killed and reaped with its owner (OwnedChild). Descriptors
// have theirs in fd_io.hpp (OwnedFd, OwnedPipe).
#pragma once

#include <cerrno>
#include <csignal>
#include <optional>
#include <utility>

#include <sys/types.h>
#include <sys/wait.h>

namespace ezpz::sys {

/// Runs `f` when it goes out of scope, unless dismissed (a temporary file removed on every
/// early return, say, but kept once it was renamed into place).
template <typename F>
class [[nodiscard]] ScopeGuard {
 public:
  explicit ScopeGuard(F f) : f_(std::move(f)) {}
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;
  ScopeGuard(ScopeGuard&&) = delete;
  ScopeGuard& operator=(ScopeGuard&&) = delete;
  ~ScopeGuard() {
    if (active_) {
      f_();
    }
  }
  void dismiss() { active_ = false; }

 private:
  F f_;
  bool active_ = true;
};

/// A forked child, killed (SIGKILL) and reaped with its owner unless it was waited for or
/// released: no failure path leaves a zombie or an orphan behind. Move-only.
class OwnedChild {
 public:
  OwnedChild() = default;
  explicit OwnedChild(pid_t pid) : pid_(pid) {}
  OwnedChild(const OwnedChild&) = delete;
  OwnedChild& operator=(const OwnedChild&) = delete;
  OwnedChild(OwnedChild&& other) noexcept : pid_(other.release()) {}
  OwnedChild& operator=(OwnedChild&& other) noexcept {
    if (this != &other) {
      reset(other.release());
    }
    return *this;
  }
  ~OwnedChild() { reset(); }

  [[nodiscard]] pid_t pid() const { return pid_; }
  /// Started and not yet waited for.
  [[nodiscard]] bool owned() const { return pid_ > 0; }

  /// Wait for it to end (EINTR retried): its wait status, nullopt when there is no child to wait
  /// for. It is no longer owned either way.
  std::optional<int> wait() {
    if (pid_ <= 0) {
      return std::nullopt;
    }
    int status = 0;
    pid_t got;
    while ((got = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return got > 0 ? std::optional<int>(status) : std::nullopt;
  }

  /// Its wait status when it has ended (it is then no longer owned); nullopt while it runs.
  std::optional<int> try_wait() {
    if (pid_ <= 0) {
      return std::nullopt;
    }
    int status = 0;
    const pid_t got = ::waitpid(pid_, &status, WNOHANG);
    if (got == 0 || (got < 0 && errno == EINTR)) {
      return std::nullopt;
    }
    pid_ = -1;
    return got > 0 ? status : 0;  // ECHILD: reaped elsewhere, nothing more to learn
  }

  /// The pid, now the caller's to wait for.
  [[nodiscard]] pid_t release() { return std::exchange(pid_, -1); }

  /// Kill (SIGKILL) and reap the child it owns, then own `pid`.
  void reset(pid_t pid = -1) {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      (void)wait();
    }
    pid_ = pid;
  }

 private:
  pid_t pid_ = -1;
};

}  // namespace ezpz::sys
