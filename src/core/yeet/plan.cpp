#include "core/yeet/plan.hpp"

#include <cstdint>
#include <cstdio>

#include "core/base/shell.hpp"
#include "core/base/strings.hpp"
#include "core/job/cluster.hpp"
#include "core/yeet/manifest.hpp"
#include "core/yeet/spare.hpp"
#include "core/yeet/transfer.hpp"

namespace ezpz::core {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

/// Is `path` equal to `dir` or inside it (both normalised)?
bool within(const std::string& path, const std::string& dir) {
  if (dir == "/") {
    return true;
  }
  return path == dir || starts_with(path, dir + "/");
}

}  // namespace

std::string_view to_string(SourceKind k) {
  switch (k) {
    case SourceKind::directory:
      return "directory";
    case SourceKind::tar:
      return "tar";
    case SourceKind::tar_gz:
      return "tar.gz";
    case SourceKind::tar_zst:
      return "tar.zst";
    case SourceKind::tar_xz:
      return "tar.xz";
  }
  return "directory";
}

std::string_view to_string(CopyMethod m) {
  switch (m) {
    case CopyMethod::sync:
      return "sync";
    case CopyMethod::copy:
      return "copy";
    case CopyMethod::compress:
      return "compress";
    case CopyMethod::tarball:
      return "tarball";
  }
  return "sync";
}

std::string_view to_string(EnvKind k) {
  switch (k) {
    case EnvKind::none:
      return "none";
    case EnvKind::venv:
      return "venv";
    case EnvKind::conda:
      return "conda";
  }
  return "none";
}

std::string normalize_path(const std::string& path) {
  std::vector<std::string> parts;
  for (auto part : split(path, '/')) {
    if (part.empty() || part == ".") {
      continue;
    }
    if (part == "..") {
      if (!parts.empty()) {
        parts.pop_back();
      }
      continue;
    }
    parts.emplace_back(part);
  }
  std::string out;
  for (const auto& p : parts) {
    out += "/" + p;
  }
  return out.empty() ? "/" : out;
}

Expected<std::pair<std::string, std::string>> yeet_source(const YeetRequest& request, const Env& env,
                                                          std::string_view command) {
  if (request.source) {
    return std::make_pair(*request.source, std::string("SRC"));
  }
  if (auto v = env.get("VIRTUAL_ENV")) {
    return std::make_pair(*v, std::string("VIRTUAL_ENV"));
  }
  if (auto c = env.get("CONDA_PREFIX")) {
    return std::make_pair(*c, std::string("CONDA_PREFIX"));
  }
  return usage_error("no source given and no active environment: pass a directory or tarball (" + std::string(command) +
                     " PATH), or activate the env first so VIRTUAL_ENV or CONDA_PREFIX is set");
}

namespace {

struct ArchiveSuffix {
  std::string_view text;
  SourceKind kind;
};
constexpr ArchiveSuffix kArchives[] = {{".tar.gz", SourceKind::tar_gz},   {".tgz", SourceKind::tar_gz},
                                       {".tar.zst", SourceKind::tar_zst}, {".tzst", SourceKind::tar_zst},
                                       {".tar.xz", SourceKind::tar_xz},   {".txz", SourceKind::tar_xz},
                                       {".tar", SourceKind::tar}};

SourceKind archive_kind(std::string_view path) {
  for (const auto& [suffix, kind] : kArchives) {
    if (ends_with(path, suffix)) {
      return kind;
    }
  }
  return SourceKind::tar;
}

}  // namespace

Expected<YeetPlan> plan_yeet(const YeetRequest& request, const Env& env, const SourceFacts& facts) {
  EZPZ_TRY_ASSIGN(auto src, yeet_source(request, env));
  YeetPlan plan;
  plan.source_origin = src.second;
  std::string source = src.first;
  if (!starts_with(source, "/")) {
    auto cwd = env.get("PWD").value_or("/");
    source = cwd + "/" + source;
  }
  plan.source = normalize_path(source);
  if (!facts.exists) {
    return usage_error("source " + plan.source + " (from " + plan.source_origin +
                       ") does not exist: pass an existing directory or .tar.gz/.tgz/.tar.zst/.tar.xz/.tar file");
  }
  const auto name = source_name(plan.source, facts.is_directory);
  if (!name) {
    return usage_error("source " + plan.source +
                       " is a file but not a .tar.gz, .tgz, .tar.zst, .tar.xz or .tar archive: pass a directory or a "
                       "tarball");
  }
  plan.name = *name;
  if (facts.is_directory) {
    plan.kind = SourceKind::directory;
    plan.env_kind = facts.has_conda_meta ? EnvKind::conda : facts.has_activate ? EnvKind::venv : EnvKind::none;
  } else {
    plan.kind = archive_kind(plan.source);
  }
  if (plan.name.empty()) {
    return usage_error("source " + plan.source + " has no name to derive a destination from: pass --dst");
  }
  std::string dst;
  if (request.destination) {
    dst = *request.destination;
  } else {
    const auto real = facts.real_path.empty() ? plan.source : facts.real_path;
    EZPZ_TRY_ASSIGN(dst, default_destination(request.destination_pattern, plan.name, path_user(env), real));
  }
  if (!starts_with(dst, "/")) {
    dst = env.get("PWD").value_or("/") + "/" + dst;
  }
  plan.destination = normalize_path(dst);
  if (plan.kind != SourceKind::directory) {
    plan.method = CopyMethod::tarball;
  } else if (request.compress) {
    plan.method = CopyMethod::compress;
  } else if (request.copy) {
    plan.method = CopyMethod::copy;
  } else {
    plan.method = CopyMethod::sync;
  }
  plan.excludes = default_excludes(request.include_pycache);
  return plan;
}

std::optional<std::string> source_name(std::string_view path, bool is_directory) {
  const auto base = std::string(path.substr(path.rfind('/') + 1));
  if (is_directory) {
    return base;
  }
  for (const auto& [suffix, kind] : kArchives) {
    if (ends_with(base, suffix)) {
      return base.substr(0, base.size() - suffix.size());
    }
  }
  return std::nullopt;
}

Expected<void> check_destination_pattern(std::string_view pattern) {
  if (pattern.empty() || pattern.front() != '/') {
    return usage_error("must be an absolute path, such as \"" + std::string(kDefaultDestination) + "\"");
  }
  bool names = false;
  for (std::size_t open = pattern.find('{'); open != std::string_view::npos; open = pattern.find('{', open + 1)) {
    const auto close = pattern.find('}', open);
    const auto word = pattern.substr(open, close == std::string_view::npos ? close : close - open + 1);
    if (word != "{user}" && word != "{name}" && word != "{hash}") {
      return usage_error("names " + std::string(word) + ": the placeholders are {user}, {name} and {hash}");
    }
    names = names || word != "{user}";
  }
  if (!names) {
    return usage_error("must hold {name} or {hash}, or every source would be copied to one place");
  }
  return {};
}

Expected<std::string> default_destination(std::string_view pattern, const std::string& name, const std::string& user,
                                          std::string_view source_real) {
  if (auto ok = check_destination_pattern(pattern); !ok) {
    return usage_error("[yeet] destination \"" + std::string(pattern) + "\" " + ok.error().message);
  }
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const auto rest = pattern.substr(i);
    const auto take = [&](std::string_view word, const std::string& value) {
      if (!starts_with(rest, word)) {
        return false;
      }
      out += value;
      i += word.size() - 1;
      return true;
    };
    if (!take("{user}", user) && !take("{name}", name) && !take("{hash}", path_tag(source_real))) {
      out += pattern[i];
    }
  }
  return out;
}

std::string path_user(const Env& env) {
  auto name = env.first_of({"USER", "LOGNAME"});
  std::string user = name ? name->second : "uid" + std::to_string(env.uid);
  for (auto& c : user) {
    const bool plain =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    c = plain ? c : '_';
  }
  return user == "." || user == ".." ? "uid" + std::to_string(env.uid) : user;
}

std::string path_tag(std::string_view path) {
  std::uint32_t h = 2166136261U;
  for (const unsigned char c : path) {
    h = (h ^ c) * 16777619U;
  }
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(h));
  return hex;
}

Expected<YeetSettings> yeet_settings(const Env& env, const FileProbe& probe) {
  EZPZ_TRY_ASSIGN(auto read, load_yeet_settings(env, probe));
  if (auto ok = check_destination_pattern(read.destination); !read.destination.empty() && !ok) {
    const auto where = config_location(env);
    return usage_error((where ? where->path + ": " : std::string()) + "[yeet] destination = \"" + read.destination +
                       "\" " + ok.error().message);
  }
  const auto& roots = default_yeet_roots();
  read.allowed_roots.insert(read.allowed_roots.begin(), roots.begin(), roots.end());
  return read;
}

std::vector<std::string> default_excludes(bool include_pycache) {
  return include_pycache ? std::vector<std::string>{} : std::vector<std::string>{"__pycache__"};
}

namespace {

/// Whether a directory of `path` (or itself) is named as yeet's work or a copy's spare: the
/// removal of those must never take a copy with them.
bool named_as_own_work(const std::string& path) {
  for (std::size_t start = 0; start < path.size();) {
    auto end = path.find('/', start);
    end = end == std::string::npos ? path.size() : end;
    const std::string_view part(path.data() + start, end - start);
    if (part.ends_with(kSpareSuffix) || part.find(kWorkInfix) != std::string_view::npos) {
      return true;
    }
    start = end + 1;
  }
  return false;
}

}  // namespace

Expected<void> check_destination(const std::string& destination, const std::string& source_real, const Env& env,
                                 const std::vector<std::string>& allowed_roots, bool force) {
  const std::string dst = normalize_path(destination);
  const std::string src = normalize_path(source_real);
  if (dst == "/") {
    return usage_error("refusing to replace / : pass a --dst such as /tmp/NAME");
  }
  for (const auto& root : allowed_roots) {
    if (normalize_path(root) == dst) {
      return usage_error("destination " + dst +
                         " is a filesystem root: yeet replaces its destination whole; pass a --dst inside it, such "
                         "as " +
                         dst + "/NAME");
    }
  }
  if (auto home = env.get("HOME"); home && normalize_path(*home) == dst) {
    return usage_error("refusing to replace your home directory " + dst + ": pass a --dst such as /tmp/NAME");
  }
  if (named_as_own_work(dst)) {
    return usage_error("destination " + dst + " is named as yeet names its own work and spares (" +
                       std::string(kWorkInfix) + "PID, " + std::string(kSpareSuffix) + "): pick another --dst");
  }
  if (within(src, dst)) {
    return usage_error("destination " + dst + " holds the source " + src + ": pick a --dst outside it");
  }
  if (within(dst, src)) {
    return usage_error("destination " + dst + " is inside the source " + src + ": pick a --dst outside it");
  }
  for (const auto& root : allowed_roots) {
    auto r = normalize_path(root);
    if (r != "/" && within(dst, r) && dst != r) {
      return {};
    }
  }
  if (force) {
    return {};
  }
  return usage_error("destination " + dst + " is not under " + join(allowed_roots, ", ") +
                     ": yeet replaces it, so pass --force if you mean it (or add its root to [yeet] "
                     "allowed_roots in config.toml)");
}

Expected<void> check_replaceable(const std::string& destination, const DestinationFacts& facts, bool force,
                                 const std::string& where, const std::string& user) {
  if (!facts.exists || (facts.empty && facts.movable)) {
    return {};
  }
  const std::string at = where.empty() ? destination : destination + " on " + where;
  if (!facts.movable) {
    const auto slash = destination.rfind('/');
    const auto parent = slash == 0 ? std::string("/") : destination.substr(0, slash);
    const auto name = destination.substr(slash + 1);
    const auto mine = (parent == "/" ? "" : parent) + "/" + (user.empty() ? "$USER" : user) + "/" + name;
    return failure(at + " belongs to " + facts.owner + " and only they can replace it: pick a destination of " +
                   "your own, such as --dst " + (user.empty() ? mine : shell_quote(mine)));
  }
  if (facts.others && !force) {
    return failure(at + " belongs to " + facts.owner +
                   ": yeet replaces another user's tree only with --force (and then reuses none of its files), "
                   "or pick another --dst");
  }
  if (force || facts.yeet_made || facts.env) {
    return {};
  }
  const std::string what = facts.type == "a directory" ? "a directory yeet did not make (no " +
                                                             std::string(kYeetMarkerName) + ", not a Python env)"
                                                       : facts.type;
  return failure(at + " is " + what + ": yeet would replace it; pass --force if you mean it, or pick another --dst");
}

}  // namespace ezpz::core
