#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <fcntl.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sys/fs/tree.hpp"
#include "sys/os/fd_io.hpp"

namespace fs = std::filesystem;

TEST_CASE("move_fd: onto itself it clears close-on-exec (dup2 would keep it)", "[fd]") {
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  const int other = ::fcntl(p[1], F_DUPFD_CLOEXEC, 100);
  REQUIRE(other >= 100);
  ezpz::sys::move_fd(p[0], p[0]);
  CHECK((::fcntl(p[0], F_GETFD) & FD_CLOEXEC) == 0);
  ezpz::sys::move_fd(p[1], other);  // a different number: dup2, whose copy is inheritable
  CHECK((::fcntl(other, F_GETFD) & FD_CLOEXEC) == 0);
  CHECK(::write(other, "x", 1) == 1);
  char c = 0;
  CHECK(::read(p[0], &c, 1) == 1);
  CHECK(c == 'x');
  for (int fd : {p[0], p[1], other}) {
    ::close(fd);
  }
}

TEST_CASE("keep_standard_fds_open: a closed stdin is /dev/null, so the next pipe does not take 0", "[fd]") {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(0);
    ezpz::sys::keep_standard_fds_open();
    int p[2];
    const bool ok = ::fcntl(0, F_GETFD) >= 0 && ::pipe(p) == 0 && p[0] > 2 && p[1] > 2;
    ::_exit(ok ? 0 : 1);
  }
  int status = -1;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("read_within: whole reads, an early end, and a writer that falls silent", "[fd]") {
  using ezpz::sys::read_within;
  using ezpz::sys::ReadResult;
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  char buf[8] = {};
  REQUIRE(::write(p[1], "abcdef", 6) == 6);
  CHECK(read_within(p[0], buf, 4, 1000) == ReadResult::ok);
  CHECK(std::string(buf, 4) == "abcd");
  // Two bytes there, four wanted, the writer still holding its end: silence, not an end.
  const auto start = std::chrono::steady_clock::now();
  CHECK(read_within(p[0], buf, 4, 200) == ReadResult::timed_out);
  const auto waited = std::chrono::steady_clock::now() - start;
  CHECK(waited >= std::chrono::milliseconds(190));
  CHECK(waited < std::chrono::seconds(5));
  REQUIRE(::write(p[1], "gh", 2) == 2);
  CHECK(read_within(p[0], buf, 2, -1) == ReadResult::ok);  // no limit
  ::close(p[1]);
  CHECK(read_within(p[0], buf, 1, 1000) == ReadResult::ended);
  ::close(p[0]);
}

TEST_CASE("remove_work_paths: a destination moved aside and not replaced goes back", "[fd]") {
  const fs::path dir = fs::temp_directory_path() / ("ezpz-work-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "dst.ezpz-tmp-7.old");
  fs::create_directories(dir / "dst.ezpz-tmp-7");
  std::ofstream(dir / "dst.ezpz-tmp-7.old" / "kept") << "previous";
  const std::string dst = (dir / "dst").string();
  CHECK(ezpz::sys::remove_work_paths(dst, {dst + ".ezpz-tmp-7", dst + ".ezpz-tmp-7.old"}).empty());
  CHECK(fs::exists(dir / "dst" / "kept"));
  CHECK_FALSE(fs::exists(dir / "dst.ezpz-tmp-7"));
  CHECK_FALSE(fs::exists(dir / "dst.ezpz-tmp-7.old"));
  // With the destination present, a .old is an outdated copy: removed.
  fs::create_directories(dir / "dst.ezpz-tmp-8.old");
  CHECK(ezpz::sys::remove_work_paths(dst, {dst + ".ezpz-tmp-8.old"}).empty());
  CHECK(fs::exists(dir / "dst" / "kept"));
  CHECK_FALSE(fs::exists(dir / "dst.ezpz-tmp-8.old"));
  fs::remove_all(dir);
}

TEST_CASE("ByteQueue: what a full pipe did not take waits, in order, however it was appended", "[fd]") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0);
  ezpz::sys::OwnedFd rd(fds[0]);
  ezpz::sys::OwnedFd wr(fds[1]);
  auto in_pipe = [&] {
    int queued = 0;
    ::ioctl(rd.get(), FIONREAD, &queued);
    return static_cast<std::size_t>(queued);
  };
  ezpz::sys::ByteQueue q;
  std::string sent;
  std::string got;
  char buf[70000];
  for (int round = 0; round < 40; ++round) {
    const std::string chunk(50000 + static_cast<std::size_t>(round) * 997, static_cast<char>('a' + round % 26));
    q.append(chunk);
    sent += chunk;
    REQUIRE(q.flush_to(wr.get()));                      // full is not gone
    const auto n = ::read(rd.get(), buf, sizeof(buf));  // the reader takes less than comes
    REQUIRE(n > 0);
    got.append(buf, static_cast<std::size_t>(n));
    CHECK(q.size() == sent.size() - got.size() - in_pipe());
  }
  while (!q.empty() || in_pipe() > 0) {
    REQUIRE(q.flush_to(wr.get()));
    if (const auto n = ::read(rd.get(), buf, sizeof(buf)); n > 0) {
      got.append(buf, static_cast<std::size_t>(n));
    }
  }
  CHECK(got == sent);
  rd.reset();
  const auto old = ::signal(SIGPIPE, SIG_IGN);
  q.append("more");
  CHECK_FALSE(q.flush_to(wr.get()));  // the reader is gone
  ::signal(SIGPIPE, old);
}

TEST_CASE("cloexec_inherited: every descriptor above 2 is closed at exec but the one kept", "[fd]") {
  int kept[2];
  int other[2];
  REQUIRE(::pipe(kept) == 0);  // neither is close-on-exec
  REQUIRE(::pipe(other) == 0);
  const auto survives = [&](int keep) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ezpz::sys::cloexec_inherited(keep);
      const auto probe = "test -e /proc/self/fd/" + std::to_string(kept[0]) + " && ! test -e /proc/self/fd/" +
                         std::to_string(other[0]);
      ::execl("/bin/sh", "sh", "-c", probe.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  };
  CHECK(survives(kept[0]));
  CHECK_FALSE(survives(-1));        // none kept
  CHECK_FALSE(survives(other[0]));  // the other kept instead
  for (int fd : {kept[0], kept[1], other[0], other[1]}) {
    ::close(fd);
  }
}

namespace {
extern "C" void ignore_signal(int /*signo*/) {}
}  // namespace

TEST_CASE("read_within: signals that keep breaking the wait do not start it again", "[fd]") {
  struct sigaction sa {};
  sa.sa_handler = ignore_signal;  // no SA_RESTART: each one breaks poll with EINTR
  struct sigaction old {};
  REQUIRE(::sigaction(SIGUSR1, &sa, &old) == 0);
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  std::atomic<bool> done{false};
  const pthread_t reader = ::pthread_self();
  std::thread interrupter([&] {  // a signal every 20 ms, for 3 s or until the wait is over
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (!done.load() && std::chrono::steady_clock::now() < until) {
      ::pthread_kill(reader, SIGUSR1);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  char c = 0;
  const auto start = std::chrono::steady_clock::now();
  CHECK(ezpz::sys::read_within(p[0], &c, 1, 300) == ezpz::sys::ReadResult::timed_out);
  const auto waited = std::chrono::steady_clock::now() - start;
  done = true;
  interrupter.join();
  CHECK(waited >= std::chrono::milliseconds(290));
  CHECK(waited < std::chrono::seconds(2));  // restarted at each signal, it would last the 3 s
  ::sigaction(SIGUSR1, &old, nullptr);
  ::close(p[0]);
  ::close(p[1]);
}
