// Training metrics: cross-rank statistics, the JSONL records (the layout Python ezpz's
// History writes: {"timestamp", "rank", "metrics": {...}, "aggregated": {"loss/mean", ...}}),
// a markdown report and a terminal plot. Pure C++ (no third-party headers): the companion
// library's History and `ezpz plot` share it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/expected.hpp"

namespace ezpz::core {

/// Named scalars in the order they were recorded.
using Metrics = std::vector<std::pair<std::string, double>>;

/// Statistics of one metric across ranks (population std, like ezpz's History).
struct MetricStats {
  double mean = 0;
  double min = 0;
  double max = 0;
  double std = 0;
};
[[nodiscard]] MetricStats summarize(const std::vector<double>& values);
/// From the sums the ranks all-reduce: sum, sum of squares, min, max over `n` ranks.
[[nodiscard]] MetricStats stats_from_sums(double sum, double sum_sq, double min, double max, int n);
/// {key/mean, key/max, key/min, key/std} for every metric (ezpz's "aggregated" names).
[[nodiscard]] Metrics aggregated_names(const Metrics& metrics, const std::vector<MetricStats>& stats);

/// "iter=3 loss=0.123456 dt=0.010" (integers without decimals).
[[nodiscard]] std::string format_metrics(const Metrics& metrics);
/// One JSONL record. Non-finite values are written as null.
[[nodiscard]] std::string jsonl_record(double timestamp, int rank, const Metrics& metrics, const Metrics& aggregated);

/// Rows of numeric fields, as read from a JSONL file or recorded by History.
struct MetricTable {
  std::vector<std::string> keys;  ///< first-seen order
  std::vector<std::map<std::string, double, std::less<>>> rows;
  /// (x, y) for `key`: x is the row's iter/step/epoch field when it has one, else its index.
  [[nodiscard]] std::vector<std::pair<double, double>> series(std::string_view key) const;
  [[nodiscard]] bool has(std::string_view key) const;
};

/// Parse JSONL leniently: every line holding a JSON object contributes its numeric fields
/// (nested objects flattened as "a/b"; "metrics" and "aggregated" are flattened without a
/// prefix; numeric arrays give their mean). Other lines are skipped and counted.
/// Defined in history_jsonl.cpp (the CLI's build only).
struct ParsedTable {
  MetricTable table;
  int skipped_lines = 0;
};
[[nodiscard]] Expected<ParsedTable> parse_metrics_jsonl(std::string_view text, const std::string& origin);

/// A markdown report: one table row per metric (latest, mean, min, max, std over steps).
[[nodiscard]] std::string markdown_report(const MetricTable& table, const std::string& title);

struct PlotSeries {
  std::string label;
  std::vector<std::pair<double, double>> points;
};
struct PlotOptions {
  int width = 72;   ///< plot area columns
  int height = 16;  ///< plot area rows
  std::string title;
};
/// Labels that tell `paths` apart: each without the leading and trailing path components all of
/// them share (".../history/run-1/metrics.jsonl" and ".../run-2/..." give "run-1" and "run-2");
/// a lone path stays whole.
[[nodiscard]] std::vector<std::string> distinct_labels(const std::vector<std::string>& paths);

/// A text plot (y axis labels on the left, x range underneath, one marker per series).
[[nodiscard]] std::string render_plot(const std::vector<PlotSeries>& series, const PlotOptions& options);

}  // namespace ezpz::core
