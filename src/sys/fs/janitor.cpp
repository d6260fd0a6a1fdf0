#include "sys/fs/janitor.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "core/yeet/transfer.hpp"
#include "sys/fs/dst_lock.hpp"
#include "sys/fs/remove.hpp"
#include "sys/os/fd_io.hpp"

namespace ezpz::sys {

bool start_janitor(const std::string& destination, const std::string& staging) {
  OwnedPipe link;
  if (!link.open()) {
    return false;
  }
  const OwnedFd self = open_self_owned();
  if (!self.valid()) {
    return false;
  }
  const OwnedFd null = open_null(O_RDWR);
  std::string exe = "ezpz";
  std::string name(kJanitor);
  std::string dst = destination;
  std::string work = staging;
  std::vector<char*> args = {exe.data(), name.data(), dst.data(), work.data(), nullptr};
  const pid_t pid = ::fork();
  if (pid == 0) {  // only async-signal-safe calls until exec; no destructor runs here
    ::setsid();    // not in the relay's process group or session: its hang-up is not ours
    move_fd(link.read_end(), 0);
    if (null.valid()) {
      move_fd(null.get(), 1);
      move_fd(null.get(), 2);
    }
    exec_self(self.get(), args.data());
    ::_exit(127);
  }
  if (pid < 0) {
    return false;
  }
  // The write end stays open (close-on-exec) for as long as this process lives: the watcher
  // sees its end when we end. It was started by exec and is not waited for: it is reparented.
  (void)link.take_write().release();
  return true;
}

int janitor_main(int argc, char** argv) {
  if (argc != 2) {
    return 2;
  }
  // It ends when its yeet process does: a SIGTERM meant for the whole job or step (which
  // that process gets too, and acts on) must not take away what removes its work.
  for (int sig : {SIGHUP, SIGINT, SIGTERM, SIGPIPE}) {
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
  const bool clean = remove_work_of(destination, pid).empty();
  remove_stale_lock(destination);  // left by its yeet when it was killed
  return clean ? 0 : 1;
}

}  // namespace ezpz::sys
