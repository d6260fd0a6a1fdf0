#include "sys/fs/remove.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/shell.hpp"
#include "core/yeet/transfer.hpp"
#include "sys/os/fd_io.hpp"

namespace ezpz::sys {
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
constexpr std::size_t kShownPath = 400;  // longer paths are shown by their last components

/// One directory on the way from the top down to the one being emptied. Only the current
/// directory is open: a parent is found again through "..", checked against dev and inode.
struct Frame {
  dev_t dev = 0;
  ino_t ino = 0;
  std::string name;               ///< in its parent ("" for the top)
  std::vector<std::string> left;  ///< entries not handled yet (read once, when entered)
};

/// The names in the directory open as `fd` (but "." and ".."), read once; false on an error.
bool list(int fd, std::vector<std::string>& names) {
  OwnedFd copy(::fcntl(fd, F_DUPFD_CLOEXEC, 0));  // closedir closes it; `fd` stays ours
  if (!copy.valid()) {
    return false;
  }
  DIR* dir = ::fdopendir(copy.get());
  if (dir == nullptr) {
    return false;  // copy closes with its owner
  }
  (void)copy.release();  // the DIR's now
  errno = 0;
  while (auto* e = ::readdir(dir)) {
    const std::string_view name = e->d_name;
    if (name != "." && name != "..") {
      names.emplace_back(name);
    }
  }
  const int err = errno;
  ::closedir(dir);
  errno = err;
  return err == 0;
}

class Remover {
 public:
  explicit Remover(std::string top) : top_(std::move(top)) {}

  Expected<void> run(const struct stat& top_st) {
    OwnedFd cur = open_dir(AT_FDCWD, top_, top_st);
    std::vector<std::string> names;
    if (!cur.valid() || !list(cur.get(), names)) {
      fail_top(errno);
    } else {
      stack_.push_back(Frame{top_st.st_dev, top_st.st_ino, "", std::move(names)});
      while (true) {
        if (!stack_.back().left.empty()) {
          std::string name = std::move(stack_.back().left.back());
          stack_.back().left.pop_back();
          step(cur, name);
        } else if (stack_.size() == 1 || !ascend(cur)) {
          break;
        }
      }
      cur.reset();
      if (::unlinkat(AT_FDCWD, top_.c_str(), AT_REMOVEDIR) != 0 && !gone_or_known(errno)) {
        fail_top(errno);
      }
    }
    if (failures_ == 0) {
      return {};
    }
    return failure(leftover_message());
  }

  void fail_top(int err) {
    note([&] { return top_; }, std::strerror(err));
  }

  std::string leftover_message() const {
    std::string more;
    if (failures_ > 1) {
      more = " (and " + std::to_string(failures_ - 1) + " more)";
    }
    return "could not remove " + first_ + more + ": remove what is left of " + top_ + " by hand (rm -rf " +
           core::shell_quote(top_) + ")";
  }

 private:
  /// A directory removal's error that says nothing new: already gone, or not empty because
  /// of a failure already counted below it.
  [[nodiscard]] bool gone_or_known(int err) const { return err == ENOENT || (err == ENOTEMPTY && failures_ > 0); }

  /// Open directory `name` in `parent` (stat'ed as `st`) to empty it: owner rwx added first
  /// when it lacks them (a read-only directory cannot be emptied, one without r not listed).
  static OwnedFd open_dir(int parent, const std::string& name, const struct stat& st) {
    const mode_t wanted = (st.st_mode & 07777) | S_IRWXU;
    OwnedFd fd(::openat(parent, name.c_str(), kDirFlags));
    if (!fd.valid() && errno == EACCES) {
      // Not followed: `name` was a directory when stat'ed and O_NOFOLLOW opens no link below.
      (void)::fchmodat(parent, name.c_str(), wanted, 0);
      fd.reset(::openat(parent, name.c_str(), kDirFlags));
    }
    if (fd.valid() && (st.st_mode & S_IRWXU) != S_IRWXU) {
      (void)::fchmod(fd.get(), wanted);  // root needs none of it; anyone else fails below
    }
    return fd;
  }

  /// Remove entry `name` of the current directory `cur`: unlinked, or entered (a directory).
  void step(OwnedFd& cur, const std::string& name) {
    // Most entries are files or symlinks: unlinked at once (unlinkat never follows a link); a
    // directory refuses (EISDIR), and what failed for another reason is looked at below.
    if (::unlinkat(cur.get(), name.c_str(), 0) == 0 || errno == ENOENT) {
      return;
    }
    struct stat st {};
    if (::fstatat(cur.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) {
        fail(name, std::strerror(errno));
      }
      return;
    }
    if (!S_ISDIR(st.st_mode)) {
      if (::unlinkat(cur.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
        fail(name, std::strerror(errno));
      }
      return;
    }
    if (st.st_dev != stack_.front().dev) {
      fail(name, "another filesystem is mounted there (not entered)");
      return;
    }
    OwnedFd child = open_dir(cur.get(), name, st);
    std::vector<std::string> names;
    struct stat opened {};
    if (!child.valid() || ::fstat(child.get(), &opened) != 0 || !list(child.get(), names)) {
      fail(name, std::strerror(errno));
      return;
    }
    if (names.empty()) {
      child.reset();
      if (::unlinkat(cur.get(), name.c_str(), AT_REMOVEDIR) != 0 && !gone_or_known(errno)) {
        fail(name, std::strerror(errno));
      }
      return;
    }
    stack_.push_back(Frame{opened.st_dev, opened.st_ino, name, std::move(names)});
    cur = std::move(child);
  }

  /// The current directory is empty (or holds what could not be removed): back to its
  /// parent, which must still be the directory we came from, and remove it there.
  bool ascend(OwnedFd& cur) {
    const std::string name = std::move(stack_.back().name);
    stack_.pop_back();
    OwnedFd parent(::openat(cur.get(), "..", kDirFlags));
    struct stat st {};
    if (!parent.valid() || ::fstat(parent.get(), &st) != 0 || st.st_dev != stack_.back().dev ||
        st.st_ino != stack_.back().ino) {
      fail(name, "it was moved while being removed");
      return false;
    }
    cur = std::move(parent);
    if (::unlinkat(cur.get(), name.c_str(), AT_REMOVEDIR) != 0 && !gone_or_known(errno)) {
      fail(name, std::strerror(errno));
    }
    return true;
  }

  void fail(const std::string& name, const std::string& why) {
    note([&] { return shown(name); }, why);
  }

  template <class PathFn>
  void note(PathFn path, const std::string& why) {
    if (failures_++ == 0) {
      first_ = path() + " (" + why + ")";
    }
  }

  /// Entry `name` of the current directory as a path, its last components only when long
  /// (a tree can be deeper than PATH_MAX).
  std::string shown(const std::string& name) const {
    std::string tail = name;
    for (auto it = stack_.rbegin(); it != stack_.rend() && !it->name.empty(); ++it) {
      if (tail.size() + it->name.size() + top_.size() > kShownPath) {
        return top_ + "/.../" + tail + " (" + std::to_string(stack_.size()) + " levels down)";
      }
      tail = it->name + "/" + tail;
    }
    return top_ + "/" + tail;
  }

  std::string top_;
  std::vector<Frame> stack_;
  std::string first_;
  unsigned long long failures_ = 0;
};

/// The paths beside `destination` named <dst>.ezpz-tmp-<pid>[.<more>] (a run's work directory
/// and the names made from it), each with that pid. Another user's are left out (she may have
/// planted them, and only she can remove them), except for root, who may remove them.
std::vector<std::pair<std::string, long>> work_paths(const std::string& destination) {
  const auto slash = destination.rfind('/');
  const std::string parent = slash == 0 ? "/" : destination.substr(0, slash);
  const std::string prefix = destination.substr(slash + 1) + std::string(core::kWorkInfix);
  std::vector<std::pair<std::string, long>> found;
  const uid_t me = ::geteuid();
  DIR* d = ::opendir(parent.c_str());
  if (d == nullptr) {
    return found;
  }
  while (auto* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(prefix, 0) != 0) {
      continue;
    }
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    struct stat st {};
    if (pid > 0 && (*end == '\0' || *end == '.') && ::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        (st.st_uid == me || me == 0)) {
      found.emplace_back(parent + "/" + name, pid);
    }
  }
  ::closedir(d);
  return found;
}

}  // namespace

Expected<void> remove_tree(const std::string& path) {
  struct stat st {};
  if (::fstatat(AT_FDCWD, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) {
      return {};
    }
    Remover r(path);
    r.fail_top(errno);
    return failure(r.leftover_message());
  }
  Remover r(path);
  if (!S_ISDIR(st.st_mode)) {
    if (::unlinkat(AT_FDCWD, path.c_str(), 0) != 0 && errno != ENOENT) {
      r.fail_top(errno);
      return failure(r.leftover_message());
    }
    return {};
  }
  return r.run(st);
}

Leftovers remove_stale_staging(const std::string& destination) {
  std::vector<std::string> stale;
  for (const auto& [path, pid] : work_paths(destination)) {
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      stale.push_back(path);
    }
  }
  return remove_work_paths(destination, stale);
}

Leftovers remove_work_of(const std::string& destination, long pid) {
  std::vector<std::string> mine;
  for (const auto& [path, owner] : work_paths(destination)) {
    if (owner == pid) {
      mine.push_back(path);
    }
  }
  return remove_work_paths(destination, mine);
}

Leftovers remove_work_paths(const std::string& destination, const std::vector<std::string>& paths) {
  struct stat st {};
  struct stat old {};
  for (const auto& path : paths) {
    // A previous tree put back only when it is this user's own: another's is never adopted.
    if (path.ends_with(".old") && ::lstat(path.c_str(), &old) == 0 && old.st_uid == ::geteuid() &&
        ::lstat(destination.c_str(), &st) != 0 && errno == ENOENT) {
      (void)::rename(path.c_str(), destination.c_str());
    }
  }
  Leftovers left;
  for (const auto& path : paths) {
    if (auto r = remove_tree(path); !r) {
      left.push_back(r.error().message);
    }
  }
  return left;
}

}  // namespace ezpz::sys
