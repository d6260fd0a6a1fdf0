// What ezpz does with the ranks' output, as plain data: labels that name the host, the last
// lines of a stream (a failing rank's last words), which ranks the console shows, per-rank log
// file names, and who went quiet when a job hangs.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/expected.hpp"
#include "core/ports/process.hpp"

namespace ezpz::core {

/// The variables the launching ezpz gives every rank's shim through the launcher's environment
/// (never a command line): where its rank hub listens ("address:port") and the hub's secret (hex).
/// The shim removes both before it runs the rank's command.
inline constexpr std::string_view kHubVar = "EZPZ_RANK_HUB";
inline constexpr std::string_view kHubKeyVar = "EZPZ_RANK_HUB_KEY";

/// "[host rank] ": what --label puts before every line of a rank.
[[nodiscard]] std::string rank_label(std::string_view host, int rank);

/// The last lines of a byte stream, as they would show on a terminal: a line ends at \n or \r
/// (a progress bar redrawn with \r keeps its last state), empty lines are dropped, and a line
/// longer than `width` keeps its first `width` bytes and says how much was cut.
class LineTail {
 public:
  explicit LineTail(std::size_t lines = 20, std::size_t width = 1000) : max_lines_(lines), width_(width) {}
  void push(std::string_view bytes);
  /// The kept lines, oldest first, with the unfinished one last.
  [[nodiscard]] std::vector<std::string> lines() const;
  /// The newest line ("" when none).
  [[nodiscard]] std::string last() const;

 private:
  void end_line();
  std::size_t max_lines_;
  std::size_t width_;
  std::deque<std::string> done_;
  std::string partial_;
  std::size_t partial_size_ = 0;  ///< bytes of the unfinished line, kept or not
};

/// The last non-empty line of `bytes` (ended by \n or \r, or not ended), at most `width` bytes.
[[nodiscard]] std::string last_line(std::string_view bytes, std::size_t width = 300);

/// Ranks chosen on the command line ("0", "0,3", "0-3,8"): sorted, inclusive ranges.
using RankRanges = std::vector<std::pair<int, int>>;
/// A usage error naming `flag` and the fix when `text` is not such a list.
[[nodiscard]] Expected<RankRanges> parse_rank_ranges(std::string_view text, std::string_view flag);
/// Whether `rank` is in `ranges` (empty ranges: every rank).
[[nodiscard]] bool in_ranges(const RankRanges& ranges, int rank);
/// The list as written for the shim's argument ("0-3,8").
[[nodiscard]] std::string ranges_text(const RankRanges& ranges);

/// Where rank `rank` on `host` keeps stream `stream` (1 stdout, 2 stderr) in `dir`:
/// DIR/rank-R.HOST.out and .err (the host as given, '/' replaced).
[[nodiscard]] std::string rank_log_path(const std::string& dir, int rank, std::string_view host, int stream);

/// Hosts whose ranks' shims all went silent (no heartbeat) kShimSilenceS before the last word any
/// other shim sent, each with why: the node stopped, or its link went down. Ranks that reported
/// their end are not silent, they are done. Hosts as the shims named them.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> silent_hosts(const std::vector<RankWatch>& ranks);

/// Who went quiet, for a hang (--idle-timeout, Ctrl-C, --time-limit): the running ranks silent
/// longest first (at most `shown`, with each one's last line), or, when every rank but some has
/// ended with code 0, which are still running and for how long since the others ended; then the
/// hosts whose shims went silent (silent_hosts); or that no rank has started. Lines without the
/// "ezpz: " tag; empty when nothing is known. `now`: seconds since the epoch.
[[nodiscard]] std::vector<std::string> quiet_report(const std::vector<RankWatch>& ranks, double now, double started,
                                                    std::size_t shown = 4);

/// Whether a few ranks (at most `shown`) still run `after_s` seconds after every other rank
/// ended with code 0: a straggler worth a word (quiet_report says who) before any timeout.
[[nodiscard]] bool straggling(const std::vector<RankWatch>& ranks, double now, double after_s, std::size_t shown = 4);

}  // namespace ezpz::core
