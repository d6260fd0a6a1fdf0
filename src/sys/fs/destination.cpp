#include "sys/fs/destination.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include "core/yeet/manifest.hpp"
#include "sys/fs/tree.hpp"
#include "sys/os/safe_dirs.hpp"

namespace ezpz::sys {
namespace {

std::string type_of(mode_t mode) {
  if (S_ISDIR(mode)) {
    return "a directory";
  }
  if (S_ISREG(mode)) {
    return "a regular file";
  }
  if (S_ISLNK(mode)) {
    return "a symbolic link";
  }
  return "a special file";
}

bool present(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

/// Whether this user may rename `path` out of its folder (`parent`): it may write the folder,
/// and where the folder is sticky (/tmp) it owns the folder or the entry; root may always.
bool movable(const struct stat& st, const std::string& parent) {
  const uid_t me = ::geteuid();
  struct stat folder {};
  if (me == 0 || ::stat(parent.c_str(), &folder) != 0) {
    return true;  // what cannot be told is left to the rename, which says why
  }
  const bool sticky = (folder.st_mode & S_ISVTX) != 0;
  return ::access(parent.c_str(), W_OK | X_OK) == 0 && (!sticky || st.st_uid == me || folder.st_uid == me);
}

}  // namespace

core::DestinationFacts inspect_destination(const std::string& path) {
  core::DestinationFacts f;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return f;
  }
  f.exists = true;
  f.type = type_of(st.st_mode);
  f.owner = user_name(st.st_uid);
  f.others = st.st_uid != ::geteuid();
  const auto slash = path.rfind('/');
  f.movable = movable(st, slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash));
  if (S_ISDIR(st.st_mode)) {
    f.empty = is_empty_dir(path);
    f.yeet_made = present(path + "/" + std::string(core::kYeetMarkerName)) ||
                  present(path + "/" + std::string(core::kManifestName));
    f.env = present(path + "/pyvenv.cfg") || present(path + "/bin/activate") || present(path + "/conda-meta");
  }
  return f;
}

}  // namespace ezpz::sys
