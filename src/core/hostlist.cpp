#include "core/hostlist.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <unordered_set>

#include "core/strings.hpp"

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

Error bad(std::string_view expr, const std::string& why) {
  return usage_error("bad nodelist '" + std::string(expr) + "': " + why +
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
      return bad(expr, "range " + std::string(part) + " has more than 1000000 hosts");
    }
    ranges.push_back(Range{*lo, *hi, lo_text.size()});
  }
  return ranges;
}

std::string pad(std::uint64_t value, std::size_t width) {
  auto digits = std::to_string(value);
  return digits.size() < width ? std::string(width - digits.size(), '0') + digits : digits;
}

/// Expand one top-level item such as "rack[1-2]-n[01-02]" into `out`.
Expected<void> expand_item(std::string_view expr, std::string_view item, HostList& out) {
  HostList partial{""};
  std::size_t longest = 0;  // of the names in `partial`
  const auto too_long = [&] {
    return bad(expr, "it makes host names longer than " + std::to_string(kMaxHostLength) + " characters");
  };
  std::size_t i = 0;
  while (i < item.size()) {
    char c = item[i];
    if (c == ']') {
      return bad(expr, "']' without a matching '['");
    }
    if (c != '[') {
      auto next = item.find_first_of("[]", i);
      auto text = item.substr(i, next == std::string_view::npos ? std::string_view::npos : next - i);
      longest += text.size();
      if (longest > kMaxHostLength) {
        return too_long();
      }
      for (auto& p : partial) {
        p += text;
      }
      i += text.size();
      continue;
    }
    auto close = item.find(']', i + 1);
    auto nested = item.find('[', i + 1);
    if (close == std::string_view::npos) {
      return bad(expr, "'[' is never closed");
    }
    if (nested < close) {
      return bad(expr, "brackets cannot nest");
    }
    auto ranges = parse_group(expr, item.substr(i + 1, close - i - 1));
    if (!ranges) {
      return ranges.error();
    }
    std::size_t widest = 0;  // a range's widest number is its upper bound, padded
    for (const auto& r : *ranges) {
      widest = std::max(widest, std::max(r.width, std::to_string(r.hi).size()));
    }
    longest += widest;
    if (longest > kMaxHostLength) {
      return too_long();
    }
    HostList next;
    for (const auto& p : partial) {
      for (const auto& r : *ranges) {
        for (auto v = r.lo; v <= r.hi; ++v) {
          next.push_back(p + pad(v, r.width));
          if (next.size() + out.size() > kMaxHosts) {
            return bad(expr, "expands to more than 1000000 hosts");
          }
        }
      }
    }
    partial = std::move(next);
    i = close + 1;
  }
  out.insert(out.end(), partial.begin(), partial.end());
  return {};
}

}  // namespace

Expected<HostList> expand_nodelist(std::string_view expr) {
  HostList hosts;
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
      if (auto r = expand_item(expr, item, hosts); !r) {
        return r.error();
      }
    }
  }
  if (depth > 0) {
    return bad(expr, "'[' is never closed");
  }
  return dedupe_hosts(hosts);
}

HostList parse_hostfile(std::string_view text) {
  HostList hosts;
  for (auto line : split(text, '\n')) {
    line = line.substr(0, line.find('#'));
    line = trim(line);
    if (line.empty()) {
      continue;
    }
    auto word = line.substr(0, line.find_first_of(" \t\r"));
    // MPICH hostfiles write "host:4"; a single colon followed by digits is a count.
    if (auto colon = word.rfind(':');
        colon != std::string_view::npos && word.find(':') == colon && parse_positive_int(word.substr(colon + 1))) {
      word = word.substr(0, colon);
    }
    if (word.empty()) {
      continue;  // a line such as ":8" names no host
    }
    hosts.emplace_back(word);
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
  if (host.empty()) {
    return usage_error("an empty host name cannot be reached over ssh");
  }
  if (host.front() == '-') {
    return usage_error("host name '" + std::string(host) +
                       "' starts with '-': ssh would read it as an option; fix the hostfile or nodelist");
  }
  for (char c : host) {
    if (static_cast<unsigned char>(c) <= ' ' || c == '\x7f') {
      return usage_error("host name '" + std::string(host) +
                         "' holds whitespace or a control character; fix the hostfile or nodelist");
    }
  }
  return {};
}

std::string short_hostname(std::string_view host) {
  return std::string(host.substr(0, host.find('.')));
}

}  // namespace ezpz::core
