#include "core/yeet/manifest.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "core/base/json_fields.hpp"

namespace ezpz::core {

std::string yeet_marker_text(const std::string& source, long long epoch_s, std::string_view version) {
  return nlohmann::json{{"ezpz_yeet", 1}, {"source", source}, {"time", epoch_s}, {"version", std::string(version)}}
             .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n";
}

bool safe_relative_path(std::string_view path) {
  if (path.empty() || path.front() == '/') {
    return false;
  }
  for (std::size_t start = 0; start <= path.size();) {
    auto slash = path.find('/', start);
    const auto part = path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part.empty() || part == "." || part == "..") {
      return false;
    }
    if (slash == std::string_view::npos) {
      break;
    }
    start = slash + 1;
  }
  return true;
}

namespace {

// Every node reads the manifest of its copy at each yeet (and the new one for a delta), and the
// head writes one: ~12k lines for a venv, where nlohmann's parser and dump cost ~60 ms each. The
// lines encode_manifest writes are read and written here directly; anything else (a name with
// an escape or a byte outside printable ASCII, keys in another order) goes through nlohmann,
// which writes and reads them the same way.

/// Printable ASCII without a quote or backslash: written and read as it is in JSON.
bool plain(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
}

/// An entry's line as nlohmann writes it (keys in order), when every string in it is plain.
bool encode_plain(const ManifestEntry& e, std::string& out) {
  if (!plain(e.path) || !plain(e.link) || !plain(e.digest) || !plain(std::string_view(&e.type, 1))) {
    return false;
  }
  auto field = [&out](std::string_view key, const auto& value) {
    out += out.back() == '{' ? "\"" : ",\"";
    out += key;
    out += "\":";
    if constexpr (std::is_convertible_v<decltype(value), std::string_view>) {
      out += '"';
      out += value;
      out += '"';
    } else {
      out += std::to_string(value);
    }
  };
  out += '{';
  if (!e.digest.empty()) {
    field("d", e.digest);
  }
  if (!e.link.empty()) {
    field("l", e.link);
  }
  field("m", e.mode);
  field("mt", e.mtime_ns);
  field("p", e.path);
  field("s", e.size);
  if (e.src_mtime_ns != 0) {
    field("smt", e.src_mtime_ns);
    field("ss", e.src_size);
  }
  field("t", std::string_view(&e.type, 1));
  out += "}\n";
  return true;
}

/// Reads a line in encode_plain's form; any step that does not match fails (the general parser
/// then reads the line).
class PlainLine {
 public:
  explicit PlainLine(std::string_view s) : s_(s) {}
  /// `"key":` (after a comma unless it is the first); true when it is next.
  bool key(std::string_view k) {
    auto j = i_ + (first_ ? 0 : 1);
    if ((!first_ && (i_ >= s_.size() || s_[i_] != ',')) || s_.substr(j, 1) != "\"" || s_.substr(j + 1, k.size()) != k ||
        s_.substr(j + 1 + k.size(), 2) != "\":") {
      return false;
    }
    i_ = j + k.size() + 3;
    first_ = false;
    return true;
  }
  bool string(std::string& out) {
    const auto end = s_.find('"', i_ + 1);
    if (i_ >= s_.size() || s_[i_] != '"' || end == std::string_view::npos || !plain(s_.substr(i_ + 1, end - i_ - 1))) {
      return false;
    }
    out.assign(s_.substr(i_ + 1, end - i_ - 1));
    i_ = end + 1;
    return true;
  }
  template <class T>
  bool number(T& out) {
    const auto [ptr, ec] = std::from_chars(s_.data() + i_, s_.data() + s_.size(), out);
    if (ec != std::errc() || ptr == s_.data() + i_) {
      return false;
    }
    i_ = static_cast<std::size_t>(ptr - s_.data());
    return true;
  }
  bool open() {
    i_ = 1;
    return s_.substr(0, 1) == "{";
  }
  [[nodiscard]] bool closed() const { return i_ + 1 == s_.size() && s_[i_] == '}'; }

 private:
  std::string_view s_;
  std::size_t i_ = 0;
  bool first_ = true;
};

std::optional<ManifestEntry> decode_plain(std::string_view line) {
  ManifestEntry e;
  PlainLine in(line);
  std::string type;
  if (!in.open() || (in.key("d") && !in.string(e.digest)) || (in.key("l") && !in.string(e.link)) || !in.key("m") ||
      !in.number(e.mode) || !in.key("mt") || !in.number(e.mtime_ns) || !in.key("p") || !in.string(e.path) ||
      !in.key("s") || !in.number(e.size) || (in.key("smt") && !in.number(e.src_mtime_ns)) ||
      (in.key("ss") && !in.number(e.src_size)) || !in.key("t") || !in.string(type) || !in.closed()) {
    return std::nullopt;
  }
  e.type = type.empty() ? 'f' : type[0];
  return e;
}

/// An entry's line, appended to `out`.
void encode_line(const ManifestEntry& e, std::string& out) {
  if (encode_plain(e, out)) {
    return;
  }
  nlohmann::json j = {{"p", e.path}, {"t", std::string(1, e.type)}, {"m", e.mode}, {"s", e.size}, {"mt", e.mtime_ns}};
  if (!e.digest.empty()) {
    j["d"] = e.digest;
  }
  if (!e.link.empty()) {
    j["l"] = e.link;
  }
  if (e.src_mtime_ns != 0) {
    j["ss"] = e.src_size;
    j["smt"] = e.src_mtime_ns;
  }
  out += j.dump() + "\n";
}

}  // namespace

std::string encode_manifest(const Manifest& m) {
  std::string out = nlohmann::json{{"ezpz_manifest", 1}, {"ignore", m.ignore}}.dump() + "\n";
  for (const auto& [path, e] : m.entries) {
    encode_line(e, out);
  }
  return out;
}

namespace {

/// A manifest's non-empty lines.
std::vector<std::string_view> text_lines(std::string_view text) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0; start < text.size();) {
    auto nl = text.find('\n', start);
    const auto line = text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    start = nl == std::string_view::npos ? text.size() : nl + 1;
    if (!line.empty()) {
      out.push_back(line);
    }
  }
  return out;
}

/// One entry's line (number `line_no`, for errors).
Expected<ManifestEntry> decode_entry(std::string_view line, std::size_t line_no) {
  auto e = decode_plain(line);
  if (!e) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      return failure("manifest line " + std::to_string(line_no) + " is not JSON");
    }
    using json_fields::get;
    e.emplace();
    std::string t = "f";
    if (!get(j, "p", e->path) || !get(j, "t", t) || !get(j, "m", e->mode) || !get(j, "s", e->size) ||
        !get(j, "mt", e->mtime_ns) || !get(j, "d", e->digest) || !get(j, "l", e->link) || !get(j, "ss", e->src_size) ||
        !get(j, "smt", e->src_mtime_ns)) {
      return failure("manifest line " + std::to_string(line_no) + " has a field of the wrong type");
    }
    e->type = t.empty() ? 'f' : t[0];
  }
  if (!safe_relative_path(e->path)) {
    return failure("manifest line " + std::to_string(line_no) + " names a bad path");
  }
  return std::move(*e);
}

}  // namespace

Expected<Manifest> decode_manifest(std::string_view text) {
  Manifest m;
  const auto lines = text_lines(text);
  if (lines.empty()) {
    return failure("empty manifest");
  }
  auto head = nlohmann::json::parse(lines.front(), nullptr, false);
  int version = 0;
  if (head.is_discarded() || !head.is_object() || !json_fields::get(head, "ezpz_manifest", version) || version != 1) {
    return failure("not an ezpz manifest (version 1)");
  }
  if (head.contains("ignore") && head["ignore"].is_array()) {
    for (const auto& name : head["ignore"]) {
      if (name.is_string()) {
        m.ignore.push_back(name.get<std::string>());
      }
    }
  }
  for (std::size_t i = 1; i < lines.size(); ++i) {
    EZPZ_TRY_ASSIGN(auto e, decode_entry(lines[i], i + 1));
    m.entries[e.path] = std::move(e);
  }
  return m;
}

std::string encode_manifest_reusing(const Manifest& m, const Manifest& old, std::string_view old_text) {
  const auto lines = text_lines(old_text);
  if (lines.size() != old.entries.size() + 1 || m.ignore != old.ignore) {
    return encode_manifest(m);  // not one line per entry (or another header): written whole
  }
  std::string out(lines.front());
  out.reserve(old_text.size() + (1 << 16));
  out += '\n';
  auto before = old.entries.begin();
  std::size_t i = 1;
  for (const auto& [path, e] : m.entries) {
    for (; before != old.entries.end() && before->first < path; ++before, ++i) {
    }
    // The old line when it is this entry's, unchanged (a plain one names its path once, as "p").
    if (before != old.entries.end() && before->first == path && before->second == e &&
        lines[i].find("\"p\":\"" + path + "\",") != std::string_view::npos) {
      out += lines[i];
      out += '\n';
    } else {
      encode_line(e, out);
    }
  }
  return out;
}

Expected<ManifestChanges> manifest_changes(std::string_view old_text, std::string_view new_text) {
  const auto a = text_lines(old_text);
  const auto b = text_lines(new_text);
  ManifestChanges changes;
  if (a.empty() || b.empty() || a.front() != b.front()) {
    EZPZ_TRY_ASSIGN(changes.whole, decode_manifest(new_text));  // another header (ignore list): read whole
    return changes;
  }
  std::string last;  // the new text's lines come in path order (as encode_manifest writes them)
  for (std::size_t i = 1, j = 1; i < a.size() || j < b.size();) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      ++i;
      ++j;
      continue;
    }
    std::optional<ManifestEntry> added;
    if (j < b.size()) {
      EZPZ_TRY_ASSIGN(added, decode_entry(b[j], j + 1));
    }
    std::optional<std::string> had;
    if (i < a.size()) {
      EZPZ_TRY_ASSIGN(auto e, decode_entry(a[i], i + 1));
      had = std::move(e.path);
    }
    if (added && (!had || added->path <= *had)) {  // new, or changed when the paths are the same
      if (added->path <= last && !last.empty()) {
        EZPZ_TRY_ASSIGN(changes.whole, decode_manifest(new_text));  // not in order: read it whole
        return changes;
      }
      i += had && added->path == *had ? 1 : 0;
      ++j;
      last = added->path;
      changes.set[added->path] = std::move(*added);
    } else {  // no longer listed
      changes.gone.push_back(std::move(*had));
      ++i;
    }
  }
  return changes;
}

Expected<Manifest> patch_manifest(const Manifest& old, std::string_view old_text, std::string_view new_text) {
  EZPZ_TRY_ASSIGN(auto changes, manifest_changes(old_text, new_text));
  if (changes.whole) {
    return std::move(*changes.whole);
  }
  Manifest now = old;
  for (const auto& path : changes.gone) {
    now.entries.erase(path);
  }
  for (auto& [path, e] : changes.set) {
    now.entries[path] = std::move(e);
  }
  return now;
}

bool same_content(const ManifestEntry& a, const ManifestEntry& b) {
  return a.type == b.type && a.mode == b.mode && a.size == b.size && a.digest == b.digest && a.link == b.link &&
         (a.type == 'd' || a.mtime_ns == b.mtime_ns);
}

ManifestDiff diff_manifests(const Manifest& old, const Manifest& now) {
  ManifestDiff d;
  for (const auto& [path, e] : old.entries) {
    auto it = now.entries.find(path);
    if (it == now.entries.end()) {
      d.removed.push_back(path);
    } else if (!same_content(e, it->second)) {
      d.changed.push_back(path);
    }
  }
  for (const auto& [path, e] : now.entries) {
    if (old.entries.count(path) == 0) {
      d.added.push_back(path);
    }
  }
  return d;
}

std::string tree_divergence(const Manifest& m, const std::map<std::string, StatEntry>& tree) {
  for (const auto& [path, e] : m.entries) {
    auto it = tree.find(path);
    if (it == tree.end()) {
      return path + " is missing";
    }
    if (!stat_matches(e, it->second)) {
      return path + " changed";
    }
  }
  for (const auto& [path, s] : tree) {
    if (m.entries.count(path) == 0) {
      return path + " is new";
    }
  }
  return {};
}

bool stat_matches(const ManifestEntry& e, const StatEntry& s) {
  const bool same_second = s.mtime_ns / 1000000000LL == e.mtime_ns / 1000000000LL;
  return s.type == e.type && s.mode == e.mode && (e.type != 'f' || (s.size == e.size && same_second)) &&
         (e.type != 'l' || s.link == e.link);
}

namespace {

/// Whether `a` and `b` describe the same tree entry as stat sees it.
bool same_on_disk(const ManifestEntry& a, const ManifestEntry& b) {
  return a.type == b.type && a.mode == b.mode &&
         (a.type != 'f' ||
          (a.size == b.size && a.digest == b.digest && a.mtime_ns / 1000000000LL == b.mtime_ns / 1000000000LL)) &&
         (a.type != 'l' || a.link == b.link);
}

}  // namespace

namespace {

/// A path the delta touched, on disk (`stats`) as the new manifest wants it (`want`; nullptr: absent).
std::string touched_divergence(const std::string& path, const ManifestEntry* want,
                               const std::map<std::string, StatEntry>& stats) {
  auto have = stats.find(path);
  if (want == nullptr && have != stats.end()) {
    return path + " is new";
  }
  if (want != nullptr && have == stats.end()) {
    return path + " is missing";
  }
  if (want != nullptr && !stat_matches(*want, have->second)) {
    return path + " changed";
  }
  return {};
}

/// An entry of the new manifest the delta did not touch: the clone's, so as the old one had it.
std::string kept_divergence(const Manifest& old, const std::string& path, const ManifestEntry& e) {
  auto before = old.entries.find(path);
  if (before == old.entries.end()) {
    return path + " is missing";
  }
  return same_on_disk(before->second, e) ? std::string() : path + " changed";
}

}  // namespace

std::string delta_divergence(const Manifest& old, const Manifest& now, const std::vector<std::string>& touched,
                             const std::map<std::string, StatEntry>& touched_stats) {
  const std::set<std::string> sent(touched.begin(), touched.end());
  for (const auto& path : sent) {
    auto want = now.entries.find(path);
    if (auto d = touched_divergence(path, want == now.entries.end() ? nullptr : &want->second, touched_stats);
        !d.empty()) {
      return d;
    }
  }
  for (const auto& [path, e] : now.entries) {  // the rest is the clone of `old`
    if (auto d = sent.count(path) == 0 ? kept_divergence(old, path, e) : std::string(); !d.empty()) {
      return d;
    }
  }
  for (const auto& [path, e] : old.entries) {
    if (sent.count(path) == 0 && now.entries.count(path) == 0) {
      return path + " is new";
    }
  }
  return {};
}

std::string delta_divergence(const Manifest& old, const ManifestChanges& changes,
                             const std::vector<std::string>& touched,
                             const std::map<std::string, StatEntry>& touched_stats) {
  if (changes.whole) {
    return delta_divergence(old, *changes.whole, touched, touched_stats);
  }
  const std::set<std::string> sent(touched.begin(), touched.end());
  const std::set<std::string> gone(changes.gone.begin(), changes.gone.end());
  for (const auto& path : sent) {  // the new manifest's entry: changed, gone, or the old one's
    const ManifestEntry* want = nullptr;
    if (auto it = changes.set.find(path); it != changes.set.end()) {
      want = &it->second;
    } else if (auto before = old.entries.find(path); before != old.entries.end() && gone.count(path) == 0) {
      want = &before->second;
    }
    if (auto d = touched_divergence(path, want, touched_stats); !d.empty()) {
      return d;
    }
  }
  for (const auto& [path, e] : changes.set) {  // the rest is the clone of `old`: unchanged there
    if (auto d = sent.count(path) == 0 ? kept_divergence(old, path, e) : std::string(); !d.empty()) {
      return d;
    }
  }
  for (const auto& path : changes.gone) {
    if (sent.count(path) == 0) {
      return path + " is new";
    }
  }
  return {};
}

std::string encode_delta_header(const DeltaHeader& h) {
  return nlohmann::json{
      {"ezpz_delta", 1}, {"base", h.base_digest}, {"new", h.new_digest}, {"removed", h.removed}, {"deltas", h.deltas}}
      .dump();
}

Expected<DeltaHeader> decode_delta_header(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  int version = 0;
  if (j.is_discarded() || !j.is_object() || !json_fields::get(j, "ezpz_delta", version) || version != 1) {
    return failure("not an ezpz delta header (version 1)");
  }
  DeltaHeader h;
  if (!json_fields::get(j, "base", h.base_digest) || !json_fields::get(j, "new", h.new_digest)) {
    return failure("malformed ezpz delta header");
  }
  try {
    h.removed = j.value("removed", std::vector<std::string>());
    h.deltas = j.value("deltas", std::map<std::string, std::string>());
  } catch (const nlohmann::json::exception&) {
    return failure("malformed ezpz delta header");
  }
  for (const auto& p : h.removed) {
    if (!safe_relative_path(p)) {
      return failure("delta header names a bad path: " + p);
    }
  }
  for (const auto& [p, f] : h.deltas) {
    if (!safe_relative_path(p) || !safe_relative_path(f) || f.find('/') != std::string::npos) {
      return failure("delta header names a bad path: " + p);
    }
  }
  return h;
}

}  // namespace ezpz::core
