// Small string helpers shared by the core modules.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ezpz::core {

[[nodiscard]] std::string_view trim(std::string_view s);
[[nodiscard]] std::string to_lower(std::string_view s);
[[nodiscard]] std::vector<std::string_view> split(std::string_view s, char sep);
/// `s` in upper case (ASCII).
[[nodiscard]] std::string to_upper(std::string_view s);
[[nodiscard]] bool starts_with(std::string_view s, std::string_view prefix);
/// A strictly positive decimal integer (no sign, no spaces, fits in int), else nullopt.
[[nodiscard]] std::optional<int> parse_positive_int(std::string_view s);
/// Edits (insert, delete, substitute, swap two neighbours) that turn `a` into `b`; for strings
/// whose lengths differ by more than 2, only that difference (a lower bound).
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);
/// " (did you mean 'x'?)" for the candidate within a typo's reach of `typed` (at most a third of
/// its letters, and 2), else "".
[[nodiscard]] std::string did_you_mean_note(std::string_view typed, const std::vector<std::string>& candidates);
/// `s` made safe to print on a terminal: control characters (ESC included) as \xNN or \n, \t,
/// \r; bytes that are not valid UTF-8 as \xNN; a backslash as \\. Valid UTF-8 text is kept.
[[nodiscard]] std::string printable(std::string_view s);
/// `s` for a one-line message: printable, and when longer than `keep` bytes (and a little), only
/// its first two thirds and last third of `keep` with its size between
/// ("nid[001-003]nid...(24000 bytes)...[001-003]"). The default keeps most paths whole.
[[nodiscard]] std::string excerpt(std::string_view s, std::size_t keep = 180);
/// Lower-case hex of `n` bytes (a digest's usual spelling).
[[nodiscard]] std::string to_hex(const unsigned char* bytes, std::size_t n);
/// The `n` bytes that 2*n hex digits (either case) spell, into `out`; false when `hex` is not that.
[[nodiscard]] bool from_hex(std::string_view hex, unsigned char* out, std::size_t n);
/// "1 node", "2 nodes", "0 nodes"; `many` for an irregular plural (count_of(2, "address", "addresses")).
[[nodiscard]] std::string count_of(std::size_t n, std::string_view one, std::string_view many = {});
/// "1.2 GB", "340 MB", "12 KB", "999 B": decimal units, as df -H and every size ezpz prints.
[[nodiscard]] std::string human_bytes(unsigned long long bytes);
[[nodiscard]] std::string join(const std::vector<std::string>& items, std::string_view sep);

}  // namespace ezpz::core
