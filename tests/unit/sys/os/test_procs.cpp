#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>
#include <cstdio>

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

namespace {
/// A child that sleeps with `EZPZ_JOB_ID` in its environment, once it has exec'd (/proc shows it).
pid_t start_job_process() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    char id[] = "EZPZ_JOB_ID=test:1";
    char* envp[] = {id, nullptr};
    ::execle("/bin/sleep", "sleep", "60", static_cast<char*>(nullptr), envp);
    ::_exit(127);
  }
  for (int i = 0; i < 5000; ++i) {  // wait for the state (the exec), at most 50 s under asan
    auto env = ezpz::sys::read_whole("/proc/" + std::to_string(pid) + "/environ", 4096);
    if (env && env->find("EZPZ_JOB_ID=") != std::string::npos) {
      break;
    }
    ::usleep(10'000);
  }
  return pid;
}
}  // namespace

TEST_CASE("kill: a process found is held by its identity, never a PID another process took since", "[procs]") {
  REQUIRE(::geteuid() == 0);  // writes /proc/sys/kernel/ns_last_pid (CI runs as root)
  ezpz::sys::PosixProcessControl pc;
  const pid_t job = start_job_process();
  REQUIRE(job > 0);
  const auto found = pc.job_processes();
  auto it = std::find_if(found.begin(), found.end(), [&](const auto& p) { return p.pid == job; });
  REQUIRE(it != found.end());
  CHECK(it->job_id == "test:1");
  CHECK(it->uid == ::geteuid());
  REQUIRE(::kill(job, SIGKILL) == 0);
  REQUIRE(::waitpid(job, nullptr, 0) == job);
  // Another process is given the job's PID (pids are handed out after ns_last_pid; another
  // process of the machine may take it first: then again).
  pid_t other = -1;
  for (int tries = 0; tries < 200 && other != job; ++tries) {
    if (other > 0) {
      ::kill(other, SIGKILL);
      ::waitpid(other, nullptr, 0);
    }
    if (FILE* f = std::fopen("/proc/sys/kernel/ns_last_pid", "w")) {
      std::fprintf(f, "%d", job - 1);
      std::fclose(f);
    }
    other = ::fork();
    if (other == 0) {
      ::pause();
      ::_exit(0);
    }
  }
  REQUIRE(other == job);
  CHECK_FALSE(pc.alive(job));
  CHECK_FALSE(pc.send_signal(job, SIGKILL));
  CHECK(::waitpid(other, nullptr, WNOHANG) == 0);  // the other process runs on, untouched
  ::kill(other, SIGKILL);
  ::waitpid(other, nullptr, 0);
}
