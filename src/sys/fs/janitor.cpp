#include "sys/fs/janitor.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "core/transfer.hpp"
#include "sys/fs/tree.hpp"
#include "sys/os/fd_io.hpp"

namespace ezpz::sys {

bool start_janitor(const std::string& destination, const std::string& staging) {
  int link[2];
  if (::pipe2(link, O_CLOEXEC) != 0) {
    return false;
  }
  const int self = open_self();
  if (self < 0) {
    ::close(link[0]);
    ::close(link[1]);
    return false;
  }
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  std::string exe = "ezpz";
  std::string name(kJanitor);
  std::string dst = destination;
  std::string work = staging;
  std::vector<char*> args = {exe.data(), name.data(), dst.data(), work.data(), nullptr};
  const pid_t pid = ::fork();
  if (pid == 0) {  // only async-signal-safe calls until exec
    ::setsid();    // not in the relay's process group or session: its hang-up is not ours
    move_fd(link[0], 0);
    if (null >= 0) {
      move_fd(null, 1);
      move_fd(null, 2);
    }
    exec_self(self, args.data());
    ::_exit(127);
  }
  ::close(link[0]);
  ::close(self);
  if (null >= 0) {
    ::close(null);
  }
  if (pid < 0) {
    ::close(link[1]);
    return false;
  }
  // link[1] stays open (close-on-exec) for as long as this process lives; the watcher was
  // started by exec and is not waited for: it is reparented when we end.
  return true;
}

int janitor_main(int argc, char** argv) {
  if (argc != 2) {
    return 2;
  }
  for (int sig : {SIGHUP, SIGINT, SIGPIPE}) {
    ::signal(sig, SIG_IGN);
  }
  const std::string destination = argv[0];
  const std::string staging = argv[1];
  const std::string prefix = destination + std::string(core::kWorkInfix);  // STAGING is DST.ezpz-tmp-PID
  if (staging.rfind(prefix, 0) != 0) {
    return 2;
  }
  const long pid = std::strtol(staging.c_str() + prefix.size(), nullptr, 10);
  char c;
  while (true) {
    const auto n = ::read(0, &c, 1);
    if (n == 0) {
      break;  // the yeet process has ended
    }
    if (n < 0 && errno != EINTR) {
      return 1;  // not our pipe: we cannot tell when it ends, so touch nothing
    }
  }
  // STAGING and every name made from it. What cannot be removed is left for the next run's
  // sweep, which reports it (no one reads this process's stderr).
  return remove_work_of(destination, pid).empty() ? 0 : 1;
}

}  // namespace ezpz::sys
