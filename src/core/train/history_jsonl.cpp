// parse_metrics_jsonl (declared in history.hpp): nlohmann stays in this .cpp, which only
// the CLI's build compiles.
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/base/strings.hpp"
#include "core/train/history.hpp"

namespace ezpz::core {
namespace {

using Row = std::map<std::string, double, std::less<>>;

void add(MetricTable& table, Row& row, const std::string& key, double value) {
  if (!std::isfinite(value)) {
    return;
  }
  if (row.emplace(key, value).second && !table.has(key)) {
    table.keys.push_back(key);
  }
}

void flatten(MetricTable& table, Row& row, const nlohmann::json& object, const std::string& prefix) {
  for (const auto& [name, value] : object.items()) {
    const bool transparent = prefix.empty() && (name == "metrics" || name == "aggregated");
    const std::string key = prefix + name;
    if (value.is_number()) {
      add(table, row, key, value.get<double>());
    } else if (value.is_object()) {
      flatten(table, row, value, transparent ? prefix : key + "/");
    } else if (value.is_array() && !value.empty()) {
      double sum = 0;
      std::size_t n = 0;
      for (const auto& item : value) {
        if (item.is_number()) {
          sum += item.get<double>();
          ++n;
        }
      }
      if (n == value.size()) {
        add(table, row, key, sum / static_cast<double>(n));
      }
    }
  }
}

}  // namespace

Expected<ParsedTable> parse_metrics_jsonl(std::string_view text, const std::string& origin) {
  ParsedTable out;
  for (auto line : split(text, '\n')) {
    line = trim(line);
    if (line.empty()) {
      continue;
    }
    auto j = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      ++out.skipped_lines;
      continue;
    }
    Row row;
    flatten(out.table, row, j, "");
    if (row.empty()) {
      ++out.skipped_lines;
      continue;
    }
    out.table.rows.push_back(std::move(row));
  }
  if (out.table.rows.empty()) {
    return usage_error(origin +
                       " has no lines holding a JSON object with numeric fields: give a JSONL metrics file "
                       "(one {\"key\": number, ...} object per line)");
  }
  return out;
}

}  // namespace ezpz::core
