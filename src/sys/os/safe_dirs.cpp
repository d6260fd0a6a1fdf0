#include "sys/os/safe_dirs.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/os/fd_io.hpp"
#include "sys/os/owned.hpp"

namespace ezpz::sys {

/// From /etc/passwd (a static binary has no NSS: a directory service's users show as "uid N").
std::string user_name(uid_t uid) {
  std::ifstream passwd("/etc/passwd");
  std::string line;
  while (std::getline(passwd, line)) {
    const auto a = line.find(':');
    const auto b = a == std::string::npos ? a : line.find(':', a + 1);
    const auto c = b == std::string::npos ? b : line.find(':', b + 1);
    if (c != std::string::npos && line.substr(b + 1, c - b - 1) == std::to_string(uid)) {
      return line.substr(0, a);
    }
  }
  return "uid " + std::to_string(uid);
}

mode_t current_umask() {
  // Read, not set and restored: umask(2) is the whole process's, and another thread may be
  // making a file at that moment.
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Umask:", 0) == 0) {
      return static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8) & 0777);
    }
  }
  return 022;
}

namespace {

bool ours(const struct stat& st) {
  return st.st_uid == ::geteuid() || st.st_uid == 0;
}

/// Whether a directory lets others rename what is in it (group or other may write, not sticky).
bool others_may_swap(const struct stat& st) {
  return (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0;
}

/// One component of the path: made when missing, checked when below a world-writable one.
Expected<void> component(const std::string& dir, bool shared, mode_t mode, struct stat& st) {
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return failure("cannot use " + dir + ": " + std::strerror(errno));
    }
    if (::mkdir(dir.c_str(), mode) != 0 && errno != EEXIST) {
      return failure("cannot create " + dir + ": " + std::strerror(errno));
    }
    if (::lstat(dir.c_str(), &st) != 0) {
      return failure("cannot use " + dir + ": " + std::strerror(errno));
    }
  }
  const std::string fix = ": pick a directory of your own (or remove it, if it is yours to remove)";
  if (S_ISLNK(st.st_mode)) {
    if (shared && !ours(st)) {
      return failure(dir + " is a symbolic link that " + user_name(st.st_uid) + " made" + fix);
    }
    if (::stat(dir.c_str(), &st) != 0) {
      return failure("cannot use " + dir + ": " + std::strerror(errno));
    }
  }
  if (!S_ISDIR(st.st_mode)) {
    return failure("cannot use " + dir + ": it is not a directory");
  }
  if (shared && !ours(st)) {
    return failure(dir + " belongs to " + user_name(st.st_uid) + ", who could replace what ezpz puts there" + fix);
  }
  if (shared && others_may_swap(st)) {
    return failure(dir + " can be written by other users, who could replace what ezpz puts there" + fix);
  }
  return {};
}

}  // namespace

Expected<void> make_dirs_safely(const std::string& dir, mode_t shared_mode) {
  bool shared = false;  // below a directory anyone may write: names there can be planted
  for (std::size_t p = dir.find('/', 1);; p = dir.find('/', p + 1)) {
    const std::string part = p == std::string::npos ? dir : dir.substr(0, p);
    if (!part.empty() && part.back() != '/') {
      struct stat st {};
      EZPZ_TRY(component(part, shared, shared ? shared_mode : 0755, st));
      shared = shared || (st.st_mode & S_IWOTH) != 0;
    }
    if (p == std::string::npos) {
      break;
    }
  }
  return {};
}

std::string work_dir_error(const std::string& path) {
  const int err = errno;
  struct stat st {};
  if (err == EEXIST && ::lstat(path.c_str(), &st) == 0 && st.st_uid != ::geteuid()) {
    return "cannot create " + path + ": " + user_name(st.st_uid) +
           " made it first (this run's process id is in its name: run again, or pick another --dst)";
  }
  return "cannot create " + path + ": " + std::strerror(err) +
         " (is the destination's filesystem writable and not full?)";
}

Expected<std::string> make_private_dir(const std::string& prefix) {
  std::string name = prefix + ".XXXXXX";
  if (::mkdtemp(name.data()) == nullptr) {
    return failure("cannot create a private directory " + name + ": " + std::strerror(errno));
  }
  return name;
}

Expected<void> write_file_atomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp.XXXXXX";
  OwnedFd fd(::mkostemp(tmp.data(), O_CLOEXEC));  // O_CREAT|O_EXCL, mode 0600
  if (!fd.valid()) {
    return failure("cannot write " + path + ": " + std::strerror(errno));
  }
  ScopeGuard remove_tmp([&tmp] { ::unlink(tmp.c_str()); });
  if (::fchmod(fd.get(), 0666 & ~current_umask()) != 0 || !write_all(fd.get(), text.data(), text.size())) {
    return failure("cannot write " + tmp + ": " + std::strerror(errno));
  }
  if (!fd.close() || ::rename(tmp.c_str(), path.c_str()) != 0) {
    return failure("cannot write " + path + ": " + std::strerror(errno));
  }
  remove_tmp.dismiss();
  return {};
}

Expected<void> point_link(const std::string& path, const std::string& target) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISLNK(st.st_mode)) {
    return failure(path + " is not a symlink: remove it, or choose another --log-dir");
  }
  for (int i = 0; i < 100; ++i) {
    const auto tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(i);
    if (::symlink(target.c_str(), tmp.c_str()) != 0) {
      if (errno == EEXIST) {
        continue;
      }
      return failure("cannot link " + path + ": " + std::strerror(errno));
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      const int e = errno;
      ::unlink(tmp.c_str());
      return failure("cannot link " + path + ": " + std::strerror(e));
    }
    return {};
  }
  return failure("cannot link " + path + ": too many leftover " + path + ".tmp.* links");
}

}  // namespace ezpz::sys
