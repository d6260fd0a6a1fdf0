#include "core/train/history.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/base/strings.hpp"

namespace ezpz::core {
namespace {

std::string number(double v, const char* format = "%.6g") {
  if (!std::isfinite(v)) {
    return "null";
  }
  if (std::abs(v) < 1e15 && v == std::floor(v)) {
    return std::to_string(static_cast<long long>(v));
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string json_object(const Metrics& metrics) {
  std::string out = "{";
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    out += (i == 0 ? "" : ", ") + json_string(metrics[i].first) + ": " + number(metrics[i].second, "%.9g");
  }
  return out + "}";
}

/// Names of x-axis fields, most specific first.
constexpr std::string_view kStepKeys[] = {"iter", "step", "epoch", "train/iter", "train/step", "iteration"};

}  // namespace

MetricStats summarize(const std::vector<double>& values) {
  if (values.empty()) {
    return {};
  }
  double sum = 0;
  double sum_sq = 0;
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  for (double v : values) {
    sum += v;
    sum_sq += v * v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  return stats_from_sums(sum, sum_sq, lo, hi, static_cast<int>(values.size()));
}

MetricStats stats_from_sums(double sum, double sum_sq, double min, double max, int n) {
  MetricStats s;
  if (n <= 0) {
    return s;
  }
  s.mean = sum / n;
  s.min = min;
  s.max = max;
  s.std = std::sqrt(std::max(0.0, sum_sq / n - s.mean * s.mean));
  return s;
}

Metrics aggregated_names(const Metrics& metrics, const std::vector<MetricStats>& stats) {
  Metrics out;
  for (std::size_t i = 0; i < metrics.size() && i < stats.size(); ++i) {
    const auto& k = metrics[i].first;
    out.emplace_back(k + "/mean", stats[i].mean);
    out.emplace_back(k + "/max", stats[i].max);
    out.emplace_back(k + "/min", stats[i].min);
    out.emplace_back(k + "/std", stats[i].std);
  }
  return out;
}

std::string format_metrics(const Metrics& metrics) {
  std::string out;
  for (const auto& [k, v] : metrics) {
    out += (out.empty() ? "" : " ") + k + "=" + number(v);
  }
  return out;
}

std::string jsonl_record(double timestamp, int rank, const Metrics& metrics, const Metrics& aggregated) {
  char ts[48];
  std::snprintf(ts, sizeof(ts), "%.6f", timestamp);
  std::string out = std::string("{\"timestamp\": ") + ts + ", \"rank\": " + std::to_string(rank) +
                    ", \"metrics\": " + json_object(metrics);
  if (!aggregated.empty()) {
    out += ", \"aggregated\": " + json_object(aggregated);
  }
  return out + "}\n";
}

bool MetricTable::has(std::string_view key) const {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

std::vector<std::pair<double, double>> MetricTable::series(std::string_view key) const {
  std::vector<std::pair<double, double>> out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    auto y = row.find(key);
    if (y == row.end()) {
      continue;
    }
    double x = static_cast<double>(i);
    for (auto step : kStepKeys) {
      if (auto s = row.find(step); s != row.end() && step != key) {
        x = s->second;
        break;
      }
    }
    out.emplace_back(x, y->second);
  }
  return out;
}

std::string markdown_report(const MetricTable& table, const std::string& title) {
  std::string out = "# " + title + "\n\n";
  out += std::to_string(table.rows.size()) + " steps recorded.\n\n";
  out += "| Metric | Latest | Mean | Min | Max | Std |\n| --- | --- | --- | --- | --- | --- |\n";
  for (const auto& key : table.keys) {
    std::vector<double> values;
    for (const auto& [x, y] : table.series(key)) {
      values.push_back(y);
    }
    if (values.empty()) {
      continue;
    }
    const auto s = summarize(values);
    out += "| " + key + " | " + number(values.back()) + " | " + number(s.mean) + " | " + number(s.min) + " | " +
           number(s.max) + " | " + number(s.std) + " |\n";
  }
  return out;
}

std::string render_plot(const std::vector<PlotSeries>& series, const PlotOptions& options) {
  static constexpr char kMarkers[] = {'*', '+', 'o', 'x', '#', '@'};
  const int width = std::max(8, options.width);
  const int height = std::max(3, options.height);
  double x0 = std::numeric_limits<double>::infinity();
  double x1 = -x0;
  double y0 = x0;
  double y1 = -x0;
  for (const auto& s : series) {
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) {
        continue;
      }
      x0 = std::min(x0, x);
      x1 = std::max(x1, x);
      y0 = std::min(y0, y);
      y1 = std::max(y1, y);
    }
  }
  std::string out;
  if (!options.title.empty()) {
    out += options.title + "\n";
  }
  if (!std::isfinite(x0)) {
    return out + "(no data)\n";
  }
  if (y1 == y0) {
    y1 = y0 + 1;
  }
  if (x1 == x0) {
    x1 = x0 + 1;
  }
  std::vector<std::string> grid(static_cast<std::size_t>(height), std::string(static_cast<std::size_t>(width), ' '));
  for (std::size_t k = 0; k < series.size(); ++k) {
    const char marker = kMarkers[k % sizeof(kMarkers)];
    for (const auto& [x, y] : series[k].points) {
      if (!std::isfinite(x) || !std::isfinite(y)) {
        continue;
      }
      const auto col = static_cast<std::size_t>(std::lround((x - x0) / (x1 - x0) * (width - 1)));
      const auto row = static_cast<std::size_t>(std::lround((y1 - y) / (y1 - y0) * (height - 1)));
      grid[row][col] = marker;
    }
  }
  char label[32];
  for (int r = 0; r < height; ++r) {
    std::string text;
    if (r == 0 || r == height - 1 || r == height / 2) {
      const double y = y1 - (y1 - y0) * r / (height - 1);
      std::snprintf(label, sizeof(label), "%10.4g", y);
      text = label;
    } else {
      text = std::string(10, ' ');
    }
    out += text + " |" + grid[static_cast<std::size_t>(r)] + "\n";
  }
  out += std::string(11, ' ') + "+" + std::string(static_cast<std::size_t>(width), '-') + "\n";
  std::snprintf(label, sizeof(label), "%-.6g", x0);
  std::string left = label;
  std::snprintf(label, sizeof(label), "%.6g", x1);
  std::string right = label;
  const int gap = std::max(1, width - static_cast<int>(left.size() + right.size()));
  out += std::string(12, ' ') + left + std::string(static_cast<std::size_t>(gap), ' ') + right + "\n";
  for (std::size_t k = 0; k < series.size(); ++k) {
    out += std::string(12, ' ') + kMarkers[k % sizeof(kMarkers)] + " " + series[k].label + "\n";
  }
  return out;
}

std::vector<std::string> distinct_labels(const std::vector<std::string>& paths) {
  if (paths.size() < 2) {
    return paths;
  }
  std::vector<std::vector<std::string>> parts;
  for (const auto& p : paths) {
    const auto words = split(p, '/');
    parts.emplace_back(words.begin(), words.end());
  }
  std::size_t shortest = parts.front().size();
  for (const auto& w : parts) {
    shortest = std::min(shortest, w.size());
  }
  const auto shared = [&](auto at) {  // whether component at(words) is the same in every path
    return std::all_of(parts.begin(), parts.end(), [&](const auto& w) { return at(w) == at(parts.front()); });
  };
  std::size_t head = 0;
  while (head + 1 < shortest && shared([&](const auto& w) { return w[head]; })) {
    ++head;
  }
  std::size_t tail = 0;
  while (head + tail + 1 < shortest && shared([&](const auto& w) { return w[w.size() - 1 - tail]; })) {
    ++tail;
  }
  const auto ext = [](const std::string& name) { return name.substr(std::min(name.rfind('.'), name.size())); };
  const bool same_ext =
      tail == 0 && shared([&](const auto& w) { return ext(w.back()); }) && !ext(parts.front().back()).empty();
  std::vector<std::string> labels;
  for (auto w : parts) {
    w.resize(w.size() - tail);
    if (same_ext) {  // run-1/run-1.jsonl, run-2/run-2.jsonl: run-1, run-2
      w.back().resize(w.back().size() - ext(w.back()).size());
      if (w.size() - head >= 2 && w[w.size() - 2] == w.back()) {
        w.pop_back();
      }
    }
    std::string label;
    for (std::size_t k = head; k < w.size(); ++k) {
      label += (label.empty() ? "" : "/") + w[k];
    }
    labels.push_back(label);
  }
  return labels;
}

}  // namespace ezpz::core
