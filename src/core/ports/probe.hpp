// The port through which core asks about the machine: files, directories,
// programs on PATH, GPU devices, name resolution; and writes small files (job
// records). sys/ implements it; tests use a fake.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/expected.hpp"

namespace ezpz::core {

/// What a program printed (stdout and stderr together) and how it ended.
struct ProgramOutput {
  int exit_code = -1;  ///< 128+N when killed by signal N
  std::string output;
  bool timed_out = false;
};

/// Free and total bytes of the filesystem holding a path (statvfs).
struct DiskSpace {
  unsigned long long free_bytes = 0;
  unsigned long long total_bytes = 0;
};

/// A resource limit of this process (getrlimit); kUnlimited for RLIM_INFINITY.
struct ResourceLimit {
  static constexpr unsigned long long kUnlimited = ~0ULL;
  unsigned long long soft = kUnlimited;
  unsigned long long hard = kUnlimited;
};

/// A file's identity and age, to tell whether it changed since it was last looked at.
struct FileStamp {
  long long mtime_ns = 0;
  unsigned long long size = 0;
  unsigned long long inode = 0;
  bool directory = false;
  unsigned owner = 0;  ///< its owner's uid
  bool operator==(const FileStamp&) const = default;
};

/// What is at a Unix socket's path: nothing, a socket a server answers on, or one nobody
/// listens on (its daemon died and left it), or something else.
enum class SocketState { absent, answers, stale, other };

/// Whether a file is signed by a key: `unreadable` when the file or the signature cannot be read.
enum class Signature { valid, invalid, unreadable };

/// Files on this node: read, list, write small files, space. Port (sys/os/posix_probe).
class FileProbe {
 public:
  virtual ~FileProbe() = default;
  /// Whole file text; an Error naming the path when it cannot be read.
  [[nodiscard]] virtual Expected<std::string> read_file(const std::string& path) const = 0;
  [[nodiscard]] virtual bool is_file(const std::string& path) const = 0;
  /// Names in a directory (not paths); empty when it does not exist.
  [[nodiscard]] virtual std::vector<std::string> list_dir(const std::string& path) const = 0;
  /// Path with symlinks resolved (the input when it cannot be resolved).
  [[nodiscard]] virtual std::string real_path(const std::string& path) const = 0;
  /// Write `text` to `path` (parents created), via a new temporary file no one could have
  /// planted (O_EXCL, a random name) and rename.
  [[nodiscard]] virtual Expected<void> write_file(const std::string& path, const std::string& text) const = 0;
  /// mkdir -p `path` (mode 0755; below a world-writable directory 0700, and what exists there must
  /// be the user's own and writable by no one else: sys/os/safe_dirs.hpp).
  [[nodiscard]] virtual Expected<void> make_dirs(const std::string& path) const = 0;
  /// A new directory `prefix` + ".XXXXXX" (mkdtemp, 0700), which no one could have made first.
  [[nodiscard]] virtual Expected<std::string> make_private_dir(const std::string& prefix) const = 0;
  /// Point the symlink `path` at `target` (a new link renamed over it: never a half-made one);
  /// an Error when `path` is something other than a symlink.
  [[nodiscard]] virtual Expected<void> point_link(const std::string& path, const std::string& target) const = 0;
  /// rmdir `path`: false when it is not an empty directory (or is gone).
  virtual bool remove_empty_dir(const std::string& path) const = 0;
  /// Space on the filesystem holding `path`; nullopt when it does not exist.
  [[nodiscard]] virtual std::optional<DiskSpace> disk_space(const std::string& path) const = 0;
  /// Bytes allocated to the files under `path` (like du; symlinks not followed).
  [[nodiscard]] virtual std::optional<unsigned long long> tree_bytes(const std::string& path) const = 0;
  /// `path`'s modification time, size and inode (symlinks followed); nullopt when it does not exist.
  [[nodiscard]] virtual std::optional<FileStamp> file_stamp(const std::string& path) const = 0;
  /// `fresh` (a file beside `target`, on its filesystem) made executable (0755) and renamed over
  /// `target`, atomically; with `keep_as`, what was at `target` stays there (a hard link, made
  /// first) for one rollback. An Error names the path and the cause; `target` is then unchanged.
  [[nodiscard]] virtual Expected<void> replace_executable(const std::string& fresh, const std::string& target,
                                                          const std::string& keep_as) const {
    (void)fresh;
    (void)keep_as;
    return failure("cannot replace " + target + " here");
  }
};

/// A host name looked up: whether it resolved, how long that took, and whether the wait was cut
/// short (then it counts as not resolving).
struct Lookup {
  bool resolves = false;
  double seconds = 0;
  bool timed_out = false;
};

/// The longest ezpz waits for one host name to resolve.
inline constexpr double kLookupTimeoutS = 2.0;
/// A look-up slower than this is said (the DNS is slow: other tools on the node will be too).
inline constexpr double kSlowLookupS = 0.5;

/// Facts about this host and the programs on it. Port (sys/os/posix_probe).
class HostProbe {
 public:
  virtual ~HostProbe() = default;
  /// Absolute path of an executable found on PATH.
  [[nodiscard]] virtual std::optional<std::string> find_program(const std::string& name) const = 0;
  /// Number of GPU device files (/dev/nvidiaN, else /dev/dri/renderD*).
  [[nodiscard]] virtual int count_gpu_devices() const = 0;
  /// Whether a host name resolves to an address (used for high-speed-network names), waiting at
  /// most `timeout_s` (a lost DNS answer makes glibc wait 5 s and more): the answer and its time.
  [[nodiscard]] virtual Lookup look_up(const std::string& host, double timeout_s) const = 0;
  /// look_up within kLookupTimeoutS: whether it resolved.
  [[nodiscard]] bool resolves(const std::string& host) const { return look_up(host, kLookupTimeoutS).resolves; }
  /// Run argv (PATH lookup) with stdin from /dev/null, `set` added to and `unset` removed from
  /// the environment, and collect its output; killed (process group) after `timeout_s`.
  /// An Error when it cannot be started.
  [[nodiscard]] virtual Expected<ProgramOutput> run_program(const std::vector<std::string>& argv,
                                                            const std::vector<std::pair<std::string, std::string>>& set,
                                                            const std::vector<std::string>& unset,
                                                            double timeout_s) const = 0;
  /// "nofile" (ulimit -n) or "memlock" (ulimit -l).
  [[nodiscard]] virtual ResourceLimit resource_limit(const std::string& name) const = 0;
  /// SHA-256 (hex) and size of the running ezpz, for shipping it to nodes; empty on failure.
  [[nodiscard]] virtual std::pair<std::string, unsigned long long> self_digest() const = 0;
  /// The SHA-256 (hex) of the file at `path`; empty when it cannot be read.
  [[nodiscard]] virtual std::string file_digest(const std::string& path) const = 0;
  /// Whether `signature_file` holds the Ed25519 signature of `file` (at most 1 MiB) by the public
  /// key `key_hex` (32 bytes as 64 hex digits).
  [[nodiscard]] virtual Signature check_signature(const std::string& file, const std::string& signature_file,
                                                  const std::string& key_hex) const = 0;
  /// Whether a server answers on the Unix socket at `path` (a connect, at once).
  [[nodiscard]] virtual SocketState unix_socket(const std::string& path) const = 0;
};

/// What core's detection reads: files and host facts together (machine, scheduler, launchers).
class SystemProbe : public FileProbe, public HostProbe {};

}  // namespace ezpz::core
