#include "sys/os/posix_probe.hpp"

#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include <dirent.h>
#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "sys/os/fd_io.hpp"
#include "sys/os/safe_dirs.hpp"

namespace ezpz::sys {

using ezpz::Expected;

Expected<std::string> PosixProbe::read_file(const std::string& path) const {
  const OwnedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return ezpz::failure("cannot read " + path + ": " + std::strerror(errno));
  }
  std::string text;
  char buf[65536];
  while (true) {
    auto n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return ezpz::failure("cannot read " + path + ": " + std::strerror(errno));
    }
    if (n == 0) {
      break;
    }
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text;
}

bool PosixProbe::is_file(const std::string& path) const {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::vector<std::string> PosixProbe::list_dir(const std::string& path) const {
  std::vector<std::string> names;
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) {
    return names;
  }
  while (auto* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") {
      names.push_back(std::move(name));
    }
  }
  ::closedir(dir);
  return names;
}

std::optional<std::string> PosixProbe::find_program(const std::string& name) const {
  if (name.find('/') != std::string::npos) {
    return ::access(name.c_str(), X_OK) == 0 ? std::optional(name) : std::nullopt;
  }
  std::size_t start = 0;
  while (start <= path_env_.size()) {
    auto end = path_env_.find(':', start);
    if (end == std::string::npos) {
      end = path_env_.size();
    }
    std::string dir = path_env_.substr(start, end - start);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return std::nullopt;
}

std::string PosixProbe::real_path(const std::string& path) const {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) {
    return path;
  }
  return resolved;
}

int PosixProbe::count_gpu_devices() const {
  int nvidia = 0;
  int render = 0;
  for (const auto& name : list_dir("/dev")) {
    if (name.rfind("nvidia", 0) == 0 && name.size() > 6 &&
        name.find_first_not_of("0123456789", 6) == std::string::npos) {
      ++nvidia;
    }
  }
  if (nvidia > 0) {
    return nvidia;
  }
  for (const auto& name : list_dir("/dev/dri")) {
    if (name.rfind("renderD", 0) == 0) {
      ++render;
    }
  }
  return render;
}

Expected<void> PosixProbe::make_dirs(const std::string& path) const {
  return make_dirs_safely(path);
}

Expected<std::string> PosixProbe::make_private_dir(const std::string& prefix) const {
  return sys::make_private_dir(prefix);
}

Expected<void> PosixProbe::point_link(const std::string& path, const std::string& target) const {
  return sys::point_link(path, target);
}

bool PosixProbe::remove_empty_dir(const std::string& path) const {
  return ::rmdir(path.c_str()) == 0;
}

Expected<void> PosixProbe::write_file(const std::string& path, const std::string& text) const {
  if (auto slash = path.rfind('/'); slash != std::string::npos && slash > 0) {
    if (auto made = make_dirs(path.substr(0, slash)); !made) {
      return made;
    }
  }
  return write_file_atomically(path, text);
}

core::Lookup PosixProbe::look_up(const std::string& host, double timeout_s) const {
  // getaddrinfo cannot be given a deadline: it runs on a thread of its own, which is left to
  // finish by itself when the answer is late (it holds only its shared state).
  struct Answer {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    bool resolves = false;
  };
  auto answer = std::make_shared<Answer>();
  const auto start = std::chrono::steady_clock::now();
  std::thread([answer, host] {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* result = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &result);
    if (result != nullptr) {
      ::freeaddrinfo(result);
    }
    const std::lock_guard<std::mutex> lock(answer->mutex);
    answer->done = true;
    answer->resolves = rc == 0;
    answer->done_cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(answer->mutex);
  const bool done =
      answer->done_cv.wait_for(lock, std::chrono::duration<double>(timeout_s), [&answer] { return answer->done; });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return core::Lookup{done && answer->resolves, seconds, !done};
}

std::optional<core::FileStamp> PosixProbe::file_stamp(const std::string& path) const {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return std::nullopt;
  }
  return core::FileStamp{static_cast<long long>(st.st_mtim.tv_sec) * 1'000'000'000LL + st.st_mtim.tv_nsec,
                         static_cast<unsigned long long>(st.st_size), static_cast<unsigned long long>(st.st_ino),
                         S_ISDIR(st.st_mode), static_cast<unsigned>(st.st_uid)};
}

Expected<void> PosixProbe::replace_executable(const std::string& fresh, const std::string& target,
                                              const std::string& keep_as) const {
  if (::chmod(fresh.c_str(), 0755) != 0) {
    return failure("cannot make " + fresh + " executable: " + std::strerror(errno));
  }
  if (!keep_as.empty()) {  // the previous one kept beside it, as it is: a second name, then the swap
    if (::unlink(keep_as.c_str()) != 0 && errno != ENOENT) {
      return failure("cannot replace " + keep_as + ": " + std::strerror(errno));
    }
    if (::link(target.c_str(), keep_as.c_str()) != 0) {
      return failure("cannot keep " + target + " as " + keep_as + ": " + std::strerror(errno));
    }
  }
  if (::rename(fresh.c_str(), target.c_str()) != 0) {
    return failure("cannot move the new ezpz to " + target + ": " + std::strerror(errno));
  }
  return {};
}

core::SocketState PosixProbe::unix_socket(const std::string& path) const {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return core::SocketState::absent;
  }
  sockaddr_un addr{};
  if (!S_ISSOCK(st.st_mode) || path.size() >= sizeof(addr.sun_path)) {
    return core::SocketState::other;
  }
  const OwnedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) {
    return core::SocketState::other;
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  // A Unix socket's connect does not wait: a listener takes it (or its backlog is full: EAGAIN),
  // none refuses it.
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0 || errno == EAGAIN) {
    return core::SocketState::answers;
  }
  return errno == ECONNREFUSED ? core::SocketState::stale : core::SocketState::other;
}

}  // namespace ezpz::sys
