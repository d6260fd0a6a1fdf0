// plan_yeet: what to copy where, and how, as plain data (the local half of yeet; the
// fan-out to other nodes reuses the same plan).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/base/env.hpp"
#include "core/base/expected.hpp"
#include "core/job/cluster.hpp"
#include "core/job/machine.hpp"
#include "core/ports/probe.hpp"

namespace ezpz::core {

enum class SourceKind { directory, tar, tar_gz, tar_zst, tar_xz };
enum class CopyMethod {
  sync,      ///< default: copy only what changed (size/mtime), delete what is gone
  copy,      ///< --copy: a full sequential copy
  compress,  ///< --compress: pack once to tar.zst, extract from it
  tarball,   ///< the source is already a tarball: extract it
};
enum class EnvKind { none, venv, conda };

[[nodiscard]] std::string_view to_string(SourceKind k);
[[nodiscard]] std::string_view to_string(CopyMethod m);
[[nodiscard]] std::string_view to_string(EnvKind k);

/// Where yeet copies a source when no --dst is given: one directory per user (made 0700, and
/// refused when another user made it), one copy per source (`{hash}`: 8 hex digits of the
/// source's resolved path), so two users or two projects' `venv` never meet. `[yeet]
/// destination` in config.toml sets another (`/tmp/{name}` is the Python ezpz's).
inline constexpr std::string_view kDefaultDestination = "/tmp/{user}/{name}-{hash}";

struct YeetRequest {
  std::optional<std::string> source;                                   ///< SRC or --src
  std::optional<std::string> destination;                              ///< --dst
  std::string destination_pattern = std::string(kDefaultDestination);  ///< when no --dst
  bool copy = false;
  bool compress = false;
  bool include_pycache = false;
  bool force = false;
};

/// What the filesystem says about the source (gathered by the caller).
struct SourceFacts {
  bool exists = false;
  bool is_directory = false;
  bool has_activate = false;    ///< bin/activate (a venv)
  bool has_conda_meta = false;  ///< conda-meta/ (a conda env)
  std::string real_path;        ///< symlinks resolved
};

struct YeetPlan {
  std::string source;         ///< absolute, as given or resolved from the environment
  std::string source_origin;  ///< "SRC", "--src", "VIRTUAL_ENV" or "CONDA_PREFIX"
  SourceKind kind = SourceKind::directory;
  std::string name;         ///< basename without archive suffix
  std::string destination;  ///< absolute, no trailing slash
  CopyMethod method = CopyMethod::sync;
  EnvKind env_kind = EnvKind::none;   ///< from the source (directories); tarballs are checked after extraction
  std::vector<std::string> excludes;  ///< directory names never copied ("__pycache__")
};

/// Resolve the source (SRC/--src, else VIRTUAL_ENV, else CONDA_PREFIX), its kind and name,
/// the destination (--dst, else the request's pattern) and the method. `facts` describes the source path.
[[nodiscard]] Expected<YeetPlan> plan_yeet(const YeetRequest& request, const Env& env, const SourceFacts& facts);

/// The source path plan_yeet will use (before facts are known).
/// What yeet and tar-env leave out of a tree, one policy for both: `__pycache__` directories
/// (Python rebuilds them, and they are often a third of a venv), unless `include_pycache`.
[[nodiscard]] std::vector<std::string> default_excludes(bool include_pycache);

/// The name a source is copied under: a directory's own name, an archive's without its suffix
/// (.tar.gz, .tgz, .tar.zst, .tzst, .tar.xz, .txz, .tar); nullopt for another file's name.
[[nodiscard]] std::optional<std::string> source_name(std::string_view path, bool is_directory);
/// Where yeet copies a source when no --dst is given: `pattern` (kDefaultDestination or the
/// config's) with `{user}`, `{name}` and `{hash}` (of `source_real`, the resolved source path).
[[nodiscard]] Expected<std::string> default_destination(std::string_view pattern, const std::string& name,
                                                        const std::string& user, std::string_view source_real);
/// Whether a destination pattern is one default_destination can fill: absolute, names only
/// {user}, {name} and {hash}, and holds {name} or {hash} (else every source shares one copy).
/// The error says what is wrong, for the config's message.
[[nodiscard]] Expected<void> check_destination_pattern(std::string_view pattern);
/// The user's name for `{user}`: USER, else LOGNAME, else "uid<N>"; characters a path should
/// not hold become '_'.
[[nodiscard]] std::string path_user(const Env& env);
/// 8 hex digits that tell sources apart (FNV-1a of the path: not a secret, a name).
[[nodiscard]] std::string path_tag(std::string_view path);

/// `command` names the command in the error for no source at all ("ezpz tar-env").
[[nodiscard]] Expected<std::pair<std::string, std::string>> yeet_source(const YeetRequest& request, const Env& env,
                                                                        std::string_view command = "ezpz yeet");

/// The config file's [yeet] settings for yeet: allowed_roots after default_yeet_roots(), the
/// destination pattern checked (a usage error naming the file).
[[nodiscard]] Expected<YeetSettings> yeet_settings(const Env& env, const FileProbe& probe);

/// Where a destination may be replaced without --force.
inline const std::vector<std::string>& default_yeet_roots() {
  return node_local_roots();
}

/// Refuse "/", $HOME, the source itself, a parent of the source, a path inside the source,
/// and (without --force) anything outside `allowed_roots`.
[[nodiscard]] Expected<void> check_destination(const std::string& destination, const std::string& source_real,
                                               const Env& env, const std::vector<std::string>& allowed_roots,
                                               bool force);

/// What is at a destination before yeet replaces it (sys: inspect_destination).
struct DestinationFacts {
  bool exists = false;
  std::string type;        ///< "a directory", "a regular file", "a symbolic link", ...
  bool empty = false;      ///< a directory with nothing in it
  bool yeet_made = false;  ///< a directory holding yeet's marker or manifest
  bool env = false;        ///< a directory holding pyvenv.cfg, bin/activate or conda-meta/
  bool movable = true;     ///< this user may move it aside (its owner, or its folder's, or root)
  std::string owner;       ///< its owner's login name (or uid)
  bool others = false;     ///< it belongs to another user (never reused, replaced only with --force)
};

/// Refuse to replace what yeet did not make (a file, a link, a directory that is neither a
/// copy of yeet's nor an env) unless `force`, and what this user cannot move aside (another
/// user's, in a sticky /tmp) always, and another user's that this one could move (root's case)
/// without `force`; `where` names the node ("" here), `user` the caller.
[[nodiscard]] Expected<void> check_replaceable(const std::string& destination, const DestinationFacts& facts,
                                               bool force, const std::string& where, const std::string& user);

/// "/a/b/../c/" -> "/a/c": lexical normalisation of an absolute path.
[[nodiscard]] std::string normalize_path(const std::string& path);

}  // namespace ezpz::core
