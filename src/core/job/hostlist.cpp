#include "core/job/hostlist.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <unordered_set>

#include "core/base/strings.hpp"

namespace ezpz::core {
namespace {

constexpr std::size_t kMaxHosts = 1'000'000;
/// DNS names have at most 253 characters: this bounds the memory an expansion takes
/// (kMaxHosts names of at most this length), whatever zero padding or prefix it holds.
constexpr std::size_t kMaxHostLength = 255;

struct Range {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  std::size_t width = 0;
};

/// `text` quoted for a one-line error: control bytes and invalid UTF-8 escaped, past about 100
/// bytes cut in its middle (a host name has at most 253; a nodelist can be any length).
std::string shown(std::string_view text) {
  return "'" + excerpt(text, 96) + "'";
}

Error bad(std::string_view expr, const std::string& why) {
  return usage_error("bad nodelist " + shown(expr) + ": " + why +
                     " (expected Slurm hostlist syntax such as nid[001-004,007])");
}

std::optional<std::uint64_t> parse_number(std::string_view s) {
  if (s.empty()) {
    return std::nullopt;
  }
  std::uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size()) {
    return std::nullopt;
  }
  return value;
}

/// Parse the inside of one bracket group: "001-003,007".
Expected<std::vector<Range>> parse_group(std::string_view expr, std::string_view body) {
  std::vector<Range> ranges;
  for (auto part : split(body, ',')) {
    part = trim(part);
    if (part.empty()) {
      return bad(expr, "empty range inside []");
    }
    auto dash = part.find('-');
    auto lo_text = part.substr(0, dash);
    auto hi_text = dash == std::string_view::npos ? lo_text : part.substr(dash + 1);
    auto lo = parse_number(lo_text);
    auto hi = parse_number(hi_text);
    if (!lo || !hi) {
      return bad(expr, "'" + std::string(part) + "' is not a number or a range like 1-4");
    }
    if (*hi < *lo) {
      return bad(expr, "range " + std::string(part) + " runs backwards");
    }
    if (*hi - *lo >= kMaxHosts) {
      return bad(expr, "range " + std::string(part) + " has more than " + std::to_string(kMaxHosts) + " hosts");
    }
    ranges.push_back(Range{*lo, *hi, lo_text.size()});
  }
  return ranges;
}

std::string pad(std::uint64_t value, std::size_t width) {
  auto digits = std::to_string(value);
  return digits.size() < width ? std::string(width - digits.size(), '0') + digits : digits;
}

/// One top-level item such as "rack[1-2]-n[01-02]", parsed: its literal texts and bracket
/// groups in order (a piece with no ranges is literal text).
struct Piece {
  std::string_view text;
  std::vector<Range> ranges;
};
using Pattern = std::vector<Piece>;

/// Parse `item`, refusing names longer than DNS allows before anything is expanded.
Expected<Pattern> parse_item(std::string_view expr, std::string_view item) {
  Pattern pattern;
  std::size_t longest = 0;  // of the names the pattern makes
  std::size_t i = 0;
  while (i < item.size()) {
    if (item[i] == ']') {
      return bad(expr, "']' without a matching '['");
    }
    if (item[i] != '[') {
      auto next = item.find_first_of("[]", i);
      auto text = item.substr(i, next == std::string_view::npos ? std::string_view::npos : next - i);
      longest += text.size();
      pattern.push_back(Piece{text, {}});
      i += text.size();
    } else {
      auto close = item.find(']', i + 1);
      if (close == std::string_view::npos) {
        return bad(expr, "'[' is never closed");
      }
      if (item.find('[', i + 1) < close) {
        return bad(expr, "brackets cannot nest");
      }
      EZPZ_TRY_ASSIGN(auto ranges, parse_group(expr, item.substr(i + 1, close - i - 1)));
      std::size_t widest = 0;  // a range's widest number is its upper bound, padded
      for (const auto& r : ranges) {
        widest = std::max(widest, std::max(r.width, std::to_string(r.hi).size()));
      }
      longest += widest;
      pattern.push_back(Piece{{}, std::move(ranges)});
      i = close + 1;
    }
    if (longest > kMaxHostLength) {
      return bad(expr, "it makes host names longer than " + std::to_string(kMaxHostLength) + " characters");
    }
  }
  return pattern;
}

/// How many names `pattern` makes, counted without making them; kMaxHosts + 1 stands for more.
std::uint64_t name_count(const Pattern& pattern) {
  std::uint64_t count = 1;
  for (const auto& piece : pattern) {
    std::uint64_t group = piece.ranges.empty() ? 1 : 0;
    for (const auto& r : piece.ranges) {
      group = std::min<std::uint64_t>(group + (r.hi - r.lo + 1), kMaxHosts + 1);  // parse_group: < kMaxHosts wide
    }
    count = std::min<std::uint64_t>(count * group, kMaxHosts + 1);  // both <= kMaxHosts + 1: no overflow
  }
  return count;
}

/// Append the names `pattern` makes to `out`, in order.
void expand_pattern(const Pattern& pattern, HostList& out) {
  HostList partial{""};
  for (const auto& piece : pattern) {
    if (piece.ranges.empty()) {
      for (auto& p : partial) {
        p += piece.text;
      }
      continue;
    }
    HostList next;
    for (const auto& p : partial) {
      for (const auto& r : piece.ranges) {
        for (auto v = r.lo; v <= r.hi; ++v) {
          next.push_back(p + pad(v, r.width));
        }
      }
    }
    partial = std::move(next);
  }
  out.insert(out.end(), std::make_move_iterator(partial.begin()), std::make_move_iterator(partial.end()));
}

constexpr std::size_t kMaxLabel = 63;
constexpr std::size_t kMaxName = 253;

bool is_count_word(std::string_view word) {
  for (std::string_view key : {"slots=", "max_slots=", "max-slots="}) {
    if (starts_with(word, key)) {
      return parse_positive_int(word.substr(key.size())).has_value();
    }
  }
  return false;
}

/// The host a hostfile line names, or why the line is not "HOST[:N] [slots=N] [max_slots=N]".
Expected<std::string_view> host_of_line(std::string_view line) {
  std::vector<std::string_view> words;
  for (std::size_t i = 0; i < line.size();) {
    const auto end = std::min(line.find_first_of(" \t", i), line.size());
    if (end > i) {
      words.push_back(line.substr(i, end - i));
    }
    i = end + 1;
  }
  auto host = words.front();
  // MPICH hostfiles write "host:4": a colon followed by a count.
  if (auto colon = host.find(':'); colon != std::string_view::npos) {
    if (!parse_positive_int(host.substr(colon + 1))) {
      return usage_error(shown(host) + " is not HOST or HOST:N (N a count of slots)");
    }
    host = host.substr(0, colon);
  }
  if (auto why = host_name_problem(host)) {
    return usage_error(shown(host) + " is not a host name: it " + *why);
  }
  for (std::size_t w = 1; w < words.size(); ++w) {
    if (!is_count_word(words[w])) {
      return usage_error(shown(words[w]) + " after the host name is not slots=N or max_slots=N");
    }
  }
  return host;
}

}  // namespace

Expected<HostList> expand_nodelist(std::string_view expr) {
  std::vector<Pattern> patterns;
  // Split on commas outside brackets.
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= expr.size(); ++i) {
    char c = i < expr.size() ? expr[i] : ',';
    if (c == '[') {
      ++depth;
    } else if (c == ']') {
      --depth;
    } else if (c == ',' && depth <= 0) {
      auto item = trim(expr.substr(start, i - start));
      start = i + 1;
      if (item.empty()) {
        continue;
      }
      EZPZ_TRY_ASSIGN(auto pattern, parse_item(expr, item));
      patterns.push_back(std::move(pattern));
    }
  }
  if (depth > 0) {
    return bad(expr, "'[' is never closed");
  }
  // Counted before any name is made: a bad list fails at once, whatever it would expand to.
  std::uint64_t total = 0;
  for (const auto& p : patterns) {
    total += name_count(p);  // each <= kMaxHosts + 1: no overflow before the check
    if (total > kMaxHosts) {
      return bad(expr, "expands to more than " + std::to_string(kMaxHosts) + " hosts");
    }
  }
  HostList hosts;
  for (const auto& p : patterns) {
    expand_pattern(p, hosts);
  }
  hosts = dedupe_hosts(hosts);
  for (const auto& h : hosts) {
    if (auto why = host_name_problem(h)) {
      return bad(expr, shown(h) + " is not a host name: it " + *why);
    }
  }
  return hosts;
}

std::optional<std::string> host_name_problem(std::string_view name) {
  if (name.empty()) {
    return "is empty";
  }
  if (name.size() > kMaxName + (name.back() == '.' ? 1 : 0)) {
    return "is longer than " + std::to_string(kMaxName) + " characters";
  }
  if (name.back() == '.') {
    name.remove_suffix(1);  // an absolute name: "node1.example."
  }
  if (name.empty()) {
    return "has an empty label ('.' alone)";
  }
  for (auto label : split(name, '.')) {
    if (label.empty()) {
      return "has an empty label ('..', or '.' at the start)";
    }
    if (label.size() > kMaxLabel) {
      return "has a label longer than " + std::to_string(kMaxLabel) + " characters";
    }
    if (label.front() == '-') {
      return label.data() == name.data() ? "starts with '-': ssh would read it as an option"
                                         : "has a label starting with '-'";
    }
    for (char c : label) {
      const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      if (!alnum && c != '-') {
        return "holds " + shown(std::string_view(&c, 1)) + " (a host name has only letters, digits, '-' and '.')";
      }
    }
  }
  return std::nullopt;
}

Expected<HostList> parse_hostfile(std::string_view text, std::string_view path) {
  HostList hosts;
  std::size_t number = 0;
  for (auto line : split(text, '\n')) {
    ++number;
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);  // CRLF line ends
    }
    line = line.substr(0, line.find('#'));
    if (line.find_first_not_of(" \t") == std::string_view::npos) {
      continue;
    }
    auto host = host_of_line(line);
    if (!host) {
      return usage_error("hostfile " + printable(path) + " line " + std::to_string(number) + ": " +
                         host.error().message + ": write one host name per line, e.g. nid001, nid001:4 or " +
                         "nid001 slots=4");
    }
    hosts.emplace_back(*host);
  }
  return dedupe_hosts(hosts);
}

HostList dedupe_hosts(const HostList& hosts) {
  HostList out;
  std::unordered_set<std::string> seen;
  for (const auto& h : hosts) {
    if (seen.insert(h).second) {
      out.push_back(h);
    }
  }
  return out;
}

Expected<void> check_remote_host(std::string_view host) {
  if (auto why = host_name_problem(host)) {
    return usage_error("host name " + shown(host) + " cannot be handed to ssh: it " + *why +
                       "; fix the hostfile or nodelist");
  }
  return {};
}

std::string short_hostname(std::string_view host) {
  return std::string(host.substr(0, host.find('.')));
}

}  // namespace ezpz::core
