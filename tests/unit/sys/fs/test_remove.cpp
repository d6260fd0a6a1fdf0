#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <climits>
#include <filesystem>
#include <fstream>
#include <string>

#include <fcntl.h>
#include <grp.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sys/fs/incremental.hpp"
#include "sys/fs/remove.hpp"
#include "sys/fs/tree.hpp"
#include "sys/os/fd_io.hpp"
#include "sys/os/read_text.hpp"

namespace fs = std::filesystem;
using ezpz::sys::OwnedFd;

namespace {

constexpr int kDeep = 3000;  // levels of "dd/": 9000 characters, past PATH_MAX (4096)

/// A fresh directory for one test case.
struct Scratch {
  explicit Scratch(const std::string& name)
      : dir(fs::temp_directory_path() / ("ezpz-rm-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add, ec);
    for (const auto& p : {dir / "p", dir / "outside"}) {
      fs::permissions(p, fs::perms::owner_all, fs::perm_options::add, ec);
    }
    (void)ezpz::sys::remove_tree(dir.string());
  }
  fs::path dir;
};

void write_at(int dirfd, const char* name, const std::string& text) {
  OwnedFd fd(::openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  REQUIRE(fd.valid());
  REQUIRE(ezpz::sys::write_all(fd.get(), text.data(), text.size()));
}

OwnedFd open_dir_at(int dirfd, const char* name) {
  OwnedFd fd(::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  REQUIRE(fd.valid());
  return fd;
}

/// Under `top` (created): a chain of kDeep directories "dd", built with descriptors; on the way
/// down, at every 500th level, a file, a symlink to `outside`, and directories with modes 0555
/// and 0000 holding a file; at the bottom a file.
void make_deep_tree(const std::string& top, const std::string& outside) {
  REQUIRE(::mkdir(top.c_str(), 0755) == 0);
  OwnedFd cur(::open(top.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(cur.valid());
  for (int level = 0; level < kDeep; ++level) {
    if (level % 500 == 0) {
      write_at(cur.get(), "file", "data");
      REQUIRE(::symlinkat(outside.c_str(), cur.get(), "to-outside") == 0);
      for (const auto& [name, mode] : {std::pair{"ro", 0555}, std::pair{"none", 0000}}) {
        REQUIRE(::mkdirat(cur.get(), name, 0755) == 0);
        {
          auto sub = open_dir_at(cur.get(), name);
          write_at(sub.get(), "inside", "x");
        }
        REQUIRE(::fchmodat(cur.get(), name, static_cast<mode_t>(mode), 0) == 0);
      }
    }
    REQUIRE(::mkdirat(cur.get(), "dd", 0755) == 0);
    cur = open_dir_at(cur.get(), "dd");
  }
  write_at(cur.get(), "bottom", "the end");
}

/// `outside` with a file in it, as a symlink's target that must survive.
std::string make_outside(const fs::path& dir) {
  const auto outside = dir / "outside";
  fs::create_directories(outside);
  std::ofstream(outside / "keep") << "kept";
  return outside.string();
}

bool outside_intact(const std::string& outside) {
  std::ifstream in(outside + "/keep");
  std::string text;
  std::getline(in, text);
  return text == "kept";
}

bool gone(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) != 0 && errno == ENOENT;
}

/// Run `body` in a forked child (as `nobody` when this is root, `files` limiting its
/// descriptors when > 0); its exit status, 0 for success.
template <class Body>
int in_child(Body body, bool unprivileged, rlim_t files = 0) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (unprivileged && ::geteuid() == 0) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) {
        ::_exit(90);
      }
    }
    if (files > 0) {
      const struct rlimit limit = {files, files};
      if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
        ::_exit(91);
      }
    }
    ::_exit(body());
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("remove_tree: a tree deeper than PATH_MAX goes, with 24 descriptors at most", "[remove]") {
  Scratch s("deep");
  const auto outside = make_outside(s.dir);
  const auto top = (s.dir / "top").string();
  make_deep_tree(top, outside);
  REQUIRE(kDeep * 3 > PATH_MAX);
  // In a child whose descriptor limit is far below the depth (the walk holds a few).
  const int rc = in_child([&] { return ezpz::sys::remove_tree(top) ? 0 : 1; }, false, 24);
  CHECK(rc == 0);
  CHECK(gone(top));
  CHECK(outside_intact(outside));
  CHECK(fs::exists(s.dir / "outside"));
}

TEST_CASE("remove_tree: read-only and mode-0000 directories are emptied, also by their unprivileged owner",
          "[remove]") {
  Scratch s("modes");
  fs::permissions(s.dir, fs::perms::all);  // the unprivileged child creates its tree here
  const auto outside = make_outside(s.dir);
  fs::permissions(s.dir / "outside", fs::perms::all);
  const auto top = (s.dir / "top").string();
  const int rc = in_child(
      [&] {
        make_deep_tree(top, outside);
        (void)::chmod(top.c_str(), 0500);  // the top itself read-only too
        auto r = ezpz::sys::remove_tree(top);
        return r ? 0 : 1;
      },
      true);
  CHECK(rc == 0);
  CHECK(gone(top));
  CHECK(outside_intact(outside));
}

TEST_CASE("remove_tree: symlinks are removed, never followed, a top that is a link or a file is unlinked", "[remove]") {
  Scratch s("links");
  const auto outside = make_outside(s.dir);
  const auto link = (s.dir / "link").string();
  REQUIRE(::symlink(outside.c_str(), link.c_str()) == 0);
  CHECK(ezpz::sys::remove_tree(link));
  CHECK(gone(link));
  CHECK(outside_intact(outside));

  const auto file = (s.dir / "file").string();
  std::ofstream(file) << "x";
  CHECK(ezpz::sys::remove_tree(file));
  CHECK(gone(file));

  const auto top = s.dir / "top";
  fs::create_directories(top / "a");
  fs::create_symlink(outside, top / "a" / "dir-link");
  fs::create_symlink(outside + "/keep", top / "file-link");
  fs::create_symlink("../../nowhere", top / "a" / "dangling");
  CHECK(ezpz::sys::remove_tree(top.string()));
  CHECK(gone(top.string()));
  CHECK(outside_intact(outside));

  CHECK(ezpz::sys::remove_tree((s.dir / "missing").string()));  // nothing there: nothing to do
}

TEST_CASE("remove_tree: a removal that fails says what is left and that it must be removed by hand", "[remove]") {
  Scratch s("fails");
  fs::permissions(s.dir, fs::perms::all);
  const auto parent = s.dir / "p";
  const auto top = parent / "top";
  // Unprivileged (root cannot be refused here): `top` is emptied, but its parent is not
  // writable, so `top` itself stays.
  std::string message;
  ezpz::sys::OwnedPipe pipe;
  REQUIRE(pipe.open());
  const int rc = in_child(
      [&] {
        fs::create_directories(top / "a" / "b");
        std::ofstream(top / "a" / "b" / "f") << "x";
        (void)::chmod(parent.c_str(), 0555);
        auto r = ezpz::sys::remove_tree(top.string());
        const auto text = r ? std::string() : r.error().message;
        (void)ezpz::sys::write_all(pipe.write_end(), text.data(), text.size());
        return r ? 1 : 0;
      },
      true);
  pipe.close_write();
  char buf[4096];
  for (ssize_t n; (n = ::read(pipe.read_end(), buf, sizeof(buf))) > 0;) {
    message.append(buf, static_cast<std::size_t>(n));
  }
  CHECK(rc == 0);
  CHECK_THAT(message, Catch::Contains(top.string() + " (Permission denied)"));
  CHECK_THAT(message, Catch::Contains("by hand (rm -rf "));
  CHECK(fs::exists(top));
  CHECK_FALSE(fs::exists(top / "a"));  // the rest went

  // A path that cannot even be looked at is reported too.
  const std::string too_long = (s.dir / std::string(300, 'x')).string();
  auto r = ezpz::sys::remove_tree(too_long);
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Catch::Contains("File name too long"));
}

TEST_CASE("commit_tree: the previous tree, deeper than PATH_MAX, is swapped out and removed", "[remove]") {
  Scratch s("commit");
  const auto outside = make_outside(s.dir);
  const auto dst = (s.dir / "dst").string();
  make_deep_tree(dst, outside);
  const auto staging = dst + ".ezpz-tmp-1";
  fs::create_directories(staging);
  std::ofstream(staging + "/new") << "new";
  auto r = ezpz::sys::commit_tree(staging, dst);
  REQUIRE(r);
  CHECK(r->empty());
  CHECK(fs::exists(dst + "/new"));
  CHECK_FALSE(fs::exists(dst + "/dd"));
  CHECK(gone(staging));
  CHECK(gone(staging + ".old"));
  CHECK(outside_intact(outside));
}

TEST_CASE("open_regular: FIFOs, devices and symlinks are refused at once, files open blocking", "[remove]") {
  Scratch s("regular");
  const auto fifo = (s.dir / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  const auto file = (s.dir / "file").string();
  std::ofstream(file) << "text";
  const auto to_fifo = (s.dir / "to-fifo").string();
  const auto to_file = (s.dir / "to-file").string();
  REQUIRE(::symlink(fifo.c_str(), to_fifo.c_str()) == 0);
  REQUIRE(::symlink(file.c_str(), to_file.c_str()) == 0);

  auto f = ezpz::sys::open_regular(fifo);  // no writer: a plain open would block for ever
  REQUIRE_FALSE(f);
  CHECK_THAT(f.error().message, Catch::Contains(fifo + " is a FIFO, not a regular file"));
  CHECK_FALSE(ezpz::sys::open_regular(to_fifo, ezpz::sys::Links::follow));
  auto l = ezpz::sys::open_regular(to_file);
  REQUIRE_FALSE(l);
  CHECK_THAT(l.error().message, Catch::Contains("is a symbolic link"));
  CHECK_FALSE(ezpz::sys::open_regular("/dev/null", ezpz::sys::Links::follow));
  auto ok = ezpz::sys::open_regular(to_file, ezpz::sys::Links::follow);
  REQUIRE(ok);
  CHECK((::fcntl(ok->get(), F_GETFL) & O_NONBLOCK) == 0);
  CHECK((::fcntl(ok->get(), F_GETFD) & FD_CLOEXEC) != 0);

  auto text = ezpz::sys::read_whole(fifo);
  REQUIRE_FALSE(text);
  CHECK(ezpz::sys::read_whole(file).value() == "text");
  CHECK_FALSE(ezpz::sys::read_head(fifo, 10));
}

TEST_CASE("copy_tree: FIFOs in the source are counted and skipped, never opened", "[remove]") {
  Scratch s("copyfifo");
  const auto src = s.dir / "src";
  fs::create_directories(src / "bin");
  REQUIRE(::mkfifo((src / "bin" / "activate").c_str(), 0644) == 0);
  std::ofstream(src / "bin" / "python") << "#!/bin/sh\n";
  const auto dst = s.dir / "dst";
  fs::create_directories(dst);
  std::atomic<bool> stop{false};
  auto stats = ezpz::sys::copy_tree(src.string(), dst.string(), {}, {}, stop);
  REQUIRE(stats);
  CHECK(stats->skipped == 1);
  CHECK(stats->first_skipped == "bin/activate");
  CHECK(fs::exists(dst / "bin" / "python"));
  CHECK_FALSE(fs::exists(fs::symlink_status(dst / "bin" / "activate")));
}

TEST_CASE("a tree with another user's file in it is never reused (held manifest, hard links, .old)",
          "[remove][security]") {
  REQUIRE(::geteuid() == 0);  // chowns a file to another user (CI runs as root)
  Scratch s("foreign");
  const auto tree = s.dir / "dst";
  fs::create_directories(tree / "pkg");
  std::ofstream(tree / "pkg" / "f.py") << "x = 1\n";
  std::ofstream(tree / "pyvenv.cfg") << "home = /usr/bin\n";
  REQUIRE(ezpz::sys::write_manifest(tree.string(), nullptr, "", {}));
  REQUIRE(ezpz::sys::held_manifest(tree.string()));  // all ours: held
  // Another user's file in it (planted, or linked in by an earlier ezpz): not held, not linked.
  REQUIRE(::chown((tree / "pkg" / "f.py").c_str(), 12345, 12345) == 0);
  auto held = ezpz::sys::held_manifest(tree.string());
  REQUIRE_FALSE(held);
  CHECK(held.error().message.find("belongs to another user") != std::string::npos);
  // sync_tree over it: the new tree's files are all ours, with the source's bytes.
  const auto src = s.dir / "src";
  fs::create_directories(src / "pkg");
  std::ofstream(src / "pkg" / "f.py") << "x = 1\n";
  fs::last_write_time(src / "pkg" / "f.py", fs::last_write_time(tree / "pkg" / "f.py"));
  const auto staging = s.dir / "staging";
  fs::create_directories(staging);
  std::atomic<bool> stop{false};
  REQUIRE(ezpz::sys::sync_tree(src.string(), tree.string(), staging.string(), {}, {}, stop));
  struct stat st {};
  REQUIRE(::stat((staging / "pkg" / "f.py").c_str(), &st) == 0);
  CHECK(st.st_uid == ::geteuid());
  CHECK(st.st_nlink == 1);  // a copy, not the other user's inode
  // Root's own .old put back; another user's never.
  const auto dst2 = (s.dir / "dst2").string();
  const auto old = dst2 + ".ezpz-tmp-3999999.old";
  fs::create_directories(old);
  REQUIRE(::chown(old.c_str(), 12345, 12345) == 0);
  (void)ezpz::sys::remove_stale_staging(dst2);
  CHECK_FALSE(fs::exists(dst2));
}
