#include "core/launch/rank_output.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>

#include "core/base/strings.hpp"
#include "core/launch/rank_channel.hpp"

namespace ezpz::core {
namespace {

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f", std::max(0.0, s));
  return buf;
}

std::optional<int> parse_rank(std::string_view s) {
  int v = -1;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v < 0) {
    return std::nullopt;
  }
  return v;
}

std::string where(const RankWatch& r) {
  return "rank " + std::to_string(r.rank) + (r.host.empty() ? "" : " on " + r.host);
}

}  // namespace

std::string rank_label(std::string_view host, int rank) {
  return "[" + (host.empty() ? std::string() : std::string(host) + " ") + std::to_string(rank) + "] ";
}

void LineTail::end_line() {
  if (partial_size_ > 0) {
    if (partial_size_ > width_) {
      partial_ += "... (" + count_of(partial_size_ - width_, "more byte", "more bytes") + ")";
    }
    done_.push_back(std::move(partial_));
    if (done_.size() > max_lines_) {
      done_.pop_front();
    }
  }
  partial_.clear();
  partial_size_ = 0;
}

void LineTail::push(std::string_view bytes) {
  while (!bytes.empty()) {
    const auto end = bytes.find_first_of("\r\n");
    const auto piece = bytes.substr(0, end);
    if (partial_.size() < width_) {
      partial_.append(piece.substr(0, width_ - partial_.size()));
    }
    partial_size_ += piece.size();
    if (end == std::string_view::npos) {
      return;
    }
    end_line();
    bytes.remove_prefix(end + 1);
  }
}

std::vector<std::string> LineTail::lines() const {
  std::vector<std::string> out(done_.begin(), done_.end());
  if (partial_size_ > 0) {
    out.push_back(partial_);
    if (out.size() > max_lines_) {
      out.erase(out.begin());
    }
  }
  return out;
}

std::string LineTail::last() const {
  if (partial_size_ > 0) {
    return partial_;
  }
  return done_.empty() ? std::string() : done_.back();
}

std::string last_line(std::string_view bytes, std::size_t width) {
  while (!bytes.empty() && (bytes.back() == '\n' || bytes.back() == '\r')) {
    bytes.remove_suffix(1);
  }
  const auto start = bytes.find_last_of("\r\n");
  const auto line = start == std::string_view::npos ? bytes : bytes.substr(start + 1);
  return std::string(line.substr(0, width));
}

Expected<RankRanges> parse_rank_ranges(std::string_view text, std::string_view flag) {
  RankRanges out;
  const auto bad = [&] {
    return usage_error(std::string(flag) + " " + std::string(text) +
                       " is not a list of ranks: give ranks and ranges such as 0 or 0,3 or 0-3,8");
  };
  if (trim(text).empty()) {
    return bad();
  }
  for (auto part : split(text, ',')) {
    part = trim(part);
    const auto dash = part.find('-');
    auto lo = parse_rank(part.substr(0, dash));
    auto hi = dash == std::string_view::npos ? lo : parse_rank(part.substr(dash + 1));
    if (!lo || !hi || *hi < *lo) {
      return bad();
    }
    out.emplace_back(*lo, *hi);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool in_ranges(const RankRanges& ranges, int rank) {
  return ranges.empty() || std::any_of(ranges.begin(), ranges.end(),
                                       [rank](const auto& r) { return rank >= r.first && rank <= r.second; });
}

std::string ranges_text(const RankRanges& ranges) {
  std::vector<std::string> parts;
  for (const auto& [lo, hi] : ranges) {
    parts.push_back(lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi));
  }
  return join(parts, ",");
}

std::string rank_log_path(const std::string& dir, int rank, std::string_view host, int stream) {
  std::string name(host.empty() ? "localhost" : host);
  std::replace(name.begin(), name.end(), '/', '_');
  return dir + "/rank-" + std::to_string(rank) + "." + name + (stream == 2 ? ".err" : ".out");
}

bool straggling(const std::vector<RankWatch>& ranks, double now, double after_s, std::size_t shown) {
  std::size_t running = 0;
  double last_end = 0;
  for (const auto& r : ranks) {
    if (!r.ended) {
      ++running;
    } else if (r.exit_code != 0) {
      return false;
    } else {
      last_end = std::max(last_end, r.ended_at);
    }
  }
  return running > 0 && running <= shown && running < ranks.size() && now - last_end >= after_s;
}

std::vector<std::pair<std::string, std::string>> silent_hosts(const std::vector<RankWatch>& ranks) {
  std::map<std::string, std::pair<double, int>> heard;  // host -> {latest word, ranks}
  double latest = 0;
  for (const auto& r : ranks) {
    const bool reported = r.ended && r.exit_code != -1;
    latest = std::max(latest, r.heard_at);  // a rank's report is a word too
    if (reported || r.host.empty() || r.heard_at <= 0) {
      continue;
    }
    auto& [at, count] = heard[r.host];
    at = std::max(at, r.heard_at);
    ++count;
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [host, h] : heard) {
    if (latest - h.first > kShimSilenceS) {
      out.emplace_back(host, (h.second == 1 ? std::string("its rank's ezpz shim")
                                            : "the ezpz shims of its " + std::to_string(h.second) + " ranks") +
                                 " said nothing for " + std::to_string(static_cast<int>(latest - h.first)) +
                                 " s while the others' did (the node stopped, or its link went down)");
    }
  }
  return out;
}

std::vector<std::string> quiet_report(const std::vector<RankWatch>& ranks, double now, double started,
                                      std::size_t shown) {
  std::vector<const RankWatch*> running;
  double last_end = 0;
  bool all_ended_ok = true;
  for (const auto& r : ranks) {
    if (!r.ended) {
      running.push_back(&r);
    } else {
      last_end = std::max(last_end, r.ended_at);
      all_ended_ok = all_ended_ok && r.exit_code == 0;
    }
  }
  std::vector<std::string> lines;
  if (running.empty()) {
    return lines;
  }
  if (std::all_of(ranks.begin(), ranks.end(), [](const RankWatch& r) { return r.host.empty() && !r.ended; })) {
    return {"no rank has started: no shim of the " + count_of(ranks.size(), "rank") + " has called ezpz"};
  }
  std::sort(running.begin(), running.end(), [](const RankWatch* a, const RankWatch* b) {
    return a->last_output != b->last_output ? a->last_output < b->last_output : a->rank < b->rank;
  });
  const std::size_t ended = ranks.size() - running.size();
  if (ended > 0 && all_ended_ok && running.size() <= shown) {
    lines.push_back(count_of(ended, "rank") + " ended with code 0, the last " + seconds_text(now - last_end) +
                    " s ago; still running: " + count_of(running.size(), "rank"));
  } else {
    lines.push_back("still running: " + count_of(running.size(), "rank") +
                    (running.size() > shown ? " (the " + std::to_string(shown) + " silent longest below)" : ""));
  }
  for (std::size_t i = 0; i < running.size() && i < shown; ++i) {
    const auto& r = *running[i];
    const double quiet = now - (r.last_output > 0 ? r.last_output : started);
    std::string line =
        "  " + where(r) + ": " + (r.last_output > 0 ? "quiet for " : "no output in ") + seconds_text(quiet) + " s";
    if (!r.last_line.empty()) {
      line += "; last line: " + r.last_line;
    }
    lines.push_back(line);
  }
  for (const auto& [host, why] : silent_hosts(ranks)) {
    lines.push_back("  " + host + ": " + why);
  }
  return lines;
}

}  // namespace ezpz::core
