#include "sys/janitor.hpp"

#include <cerrno>
#include <csignal>
#include <string_view>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/fd_io.hpp"
#include "sys/tree.hpp"

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
  // STAGING and every name made from it: STAGING.apply, .lift, .old, .delta, .pack.tar.zst...
  const auto slash = staging.rfind('/');
  const std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : staging.substr(0, slash);
  const std::string base = staging.substr(slash == std::string::npos ? 0 : slash + 1);
  std::vector<std::string> left;
  if (DIR* dir = ::opendir(parent.c_str())) {
    while (const auto* e = ::readdir(dir)) {
      const std::string_view name = e->d_name;
      if (name == base ||
          (name.size() > base.size() && name.substr(0, base.size()) == base && name[base.size()] == '.')) {
        left.push_back(parent + "/" + std::string(name));
      }
    }
    ::closedir(dir);
  }
  remove_work_paths(destination, left);
  return 0;
}

}  // namespace ezpz::sys
