// What an archive may put on disk, judged entry by entry and then as a whole: names that stay
// inside (no "/" start, no "..", within a depth and length), only the kinds a Python env needs
// (files, directories, symlinks, hard links: never FIFOs, sockets or devices), modes that cannot
// widen access, a member stored twice replaced as GNU tar does, and relative symlinks that,
// resolved through the other links of the finished tree, stay inside it. Pure: sys/archive.cpp
// asks it and does what it says.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ezpz::core {

enum class EntryKind { file, dir, symlink, hardlink, fifo, socket, char_device, block_device, other };

enum class Refusal {
  none,
  empty_name,       ///< "" is no path
  absolute,         ///< starts with '/'
  dot_dot,          ///< a ".." component
  too_deep,         ///< more components than ExtractLimits::max_depth
  too_long,         ///< longer than ExtractLimits::max_path bytes
  special_file,     ///< FIFO, socket, device or unknown kind
  hardlink_target,  ///< a hard link to a path outside, through a link, or not extracted before
  symlink_escape,   ///< a relative symlink that leaves the tree
  symlink_loop,     ///< a symlink chain longer than kMaxLinkHops
  kind_change,      ///< a directory stored again as something else
};

struct ExtractLimits {
  std::size_t max_depth = 256;  ///< components in a name
  std::size_t max_path = 3800;  ///< bytes in a name (the caller leaves room for its root under PATH_MAX)
  /// false for yeet's own archives (a tree this node already holds; the stream is checked with
  /// SHA-256 frame by frame): symlinks are judged by their text alone, as that tree's were.
  bool resolve_links = true;
};

struct EntryVerdict {
  Refusal refusal = Refusal::none;
  std::string reason;     ///< for a refusal: why, in words (the entry's name is not in it)
  std::string name;       ///< the name, normalized ("./a//b/" -> "a/b"; "" is the root)
  bool replaces = false;  ///< the name was extracted before: remove the old one first
  [[nodiscard]] bool ok() const { return refusal == Refusal::none; }
};

/// The permission bits to create an entry with: no setuid, setgid or sticky bit, the umask
/// applied, and never group- or world-writable.
[[nodiscard]] unsigned safe_mode(unsigned mode, unsigned umask);

/// "./a//b/" -> "a/b"; "" and "." and "./" -> "" (the root).
[[nodiscard]] std::string normalize_entry_name(std::string_view name);

class ExtractGuard {
 public:
  static constexpr int kMaxLinkHops = 40;  ///< as the kernel's ELOOP limit
  explicit ExtractGuard(ExtractLimits limits = {}) : limits_(limits) {}

  /// Judge the next entry; `link` is a symlink's target or a hard link's target name. An
  /// accepted entry is remembered as part of the tree.
  EntryVerdict admit(std::string_view name, EntryKind kind, std::string_view link = {});

  /// Once every entry is in: each relative symlink of the final tree (the last member of a name,
  /// hard links to symlinks included) resolved through the others must stay inside the tree,
  /// whose root is the single top-level directory when the archive has one (it is lifted).
  /// Returns the first that does not (refusal, its name and target), or an ok verdict.
  [[nodiscard]] EntryVerdict check_links() const;

  /// The single top-level directory that will become the root, or "" when there is none.
  [[nodiscard]] std::string lifted_top() const;

 private:
  struct Node {
    EntryKind kind;
    std::string target;  ///< a symlink's
  };
  /// Whether resolve follows the links the archive made on the way, or reads the target as text.
  enum class Through { text, links };
  /// Whether `target`, read from the directory of `name`, stays under `root` (components).
  [[nodiscard]] Refusal resolve(const std::string& name, const std::string& target, std::size_t root,
                                Through through) const;

  ExtractLimits limits_;
  std::unordered_map<std::string, Node> nodes_;
  std::vector<std::string> top_names_;  ///< distinct first components, in order (up to 2)
};

/// "a FIFO", "a character device", ... for messages.
[[nodiscard]] std::string_view describe(EntryKind kind);

}  // namespace ezpz::core
