#include <catch2/catch.hpp>

#include <csignal>

#include <sys/wait.h>
#include <unistd.h>

#include "sys/os/exec.hpp"
#include "sys/os/read_text.hpp"

// `ezpz kill` counts a job's ranks as stopped by PosixProcessControl::alive: a process that is
// gone, or dead and waiting for its parent to reap it, is stopped; one that is reaped while its
// /proc entry is read must not read as running (the read fails, it is not an empty text).

TEST_CASE("read_head fails on a read error instead of returning an empty text", "[procs]") {
  // /proc/self/mem is a regular file whose read at offset 0 fails (EIO: address 0 is unmapped).
  auto head = ezpz::sys::read_head("/proc/self/mem", 64);
  REQUIRE_FALSE(head);
  CHECK(head.error().message.find("/proc/self/mem") != std::string::npos);
  auto stat = ezpz::sys::read_head("/proc/self/stat", 4096);
  REQUIRE(stat);
  CHECK(stat->find(')') != std::string::npos);
}

TEST_CASE("alive: a running process is, a zombie and a reaped one are not", "[procs]") {
  ezpz::sys::PosixProcessControl pc;
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  CHECK(pc.alive(pid));
  REQUIRE(::kill(pid, SIGKILL) == 0);  // whatever mask or handler an earlier test left
  // Wait for it to be a zombie without reaping it (WNOWAIT).
  siginfo_t info{};
  REQUIRE(::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) == 0);
  CHECK_FALSE(pc.alive(pid));
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK_FALSE(pc.alive(pid));
}
