#include "sys/fs/dst_lock.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/os/safe_dirs.hpp"

namespace ezpz::sys {
namespace {

/// Whether `fd` is still the file at `path` (a holder removes it as it lets go: then try again).
bool still_there(int fd, const std::string& path) {
  struct stat a {};
  struct stat b {};
  return ::fstat(fd, &a) == 0 && ::lstat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

std::string holder(const std::string& path) {
  char buf[32] = {};
  const OwnedFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  const auto n = fd.valid() ? ::read(fd.get(), buf, sizeof(buf) - 1) : -1;
  return n > 0 ? " (pid " + std::string(buf, static_cast<std::size_t>(n)) + ")" : "";
}

}  // namespace

std::string lock_path(const std::string& destination) {
  return destination + ".ezpz-lock";
}

Expected<void> DestinationLock::acquire(const std::string& destination, const std::atomic<bool>& stop) {
  release();
  const std::string path = lock_path(destination);
  bool said = false;
  while (!stop.load()) {
    OwnedFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    struct stat st {};
    if (!fd.valid() || ::fstat(fd.get(), &st) != 0) {
      return failure("cannot lock " + destination + " (" + path + ": " + std::strerror(errno) + ")");
    }
    if (st.st_uid != ::geteuid() || !S_ISREG(st.st_mode)) {
      return failure(path + " belongs to " + user_name(st.st_uid) +
                     ", who could hold it for ever: pick another --dst (or remove it, if it is yours to remove)");
    }
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
      if (still_there(fd.get(), path)) {
        const std::string pid = std::to_string(::getpid());
        (void)::ftruncate(fd.get(), 0);
        (void)::pwrite(fd.get(), pid.data(), pid.size(), 0);
        path_ = path;
        fd_ = std::move(fd);
        return {};
      }
      continue;  // its holder removed it as it let go: take the new one
    }
    if (errno != EWOULDBLOCK && errno != EINTR) {
      return failure("cannot lock " + path + ": " + std::strerror(errno));
    }
    if (!said) {
      const std::string note = "ezpz: waiting for another yeet to " + destination + " to finish" + holder(path) + "\n";
      (void)write_all(2, note.data(), note.size());
      said = true;
    }
    ::usleep(50'000);
  }
  return failure("interrupted");
}

void DestinationLock::release() {
  if (fd_.valid()) {
    ::unlink(path_.c_str());  // while held: the next one takes a new file
    fd_.reset();
  }
}

void remove_stale_lock(const std::string& destination) {
  const std::string path = lock_path(destination);
  const OwnedFd fd(::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (fd.valid() && ::fstat(fd.get(), &st) == 0 && st.st_uid == ::geteuid() &&
      ::flock(fd.get(), LOCK_EX | LOCK_NB) == 0 && still_there(fd.get(), path)) {
    ::unlink(path.c_str());
  }
}

}  // namespace ezpz::sys
