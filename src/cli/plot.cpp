#include "cli/plot.hpp"

#include <cstdio>

#include <CLI/App.hpp>
#include <CLI/Validators.hpp>

#include "cli/terminal.hpp"
#include "core/base/strings.hpp"
#include "core/train/history.hpp"

namespace ezpz::cli {

void PlotCommand::add_cli(CLI::App& app) {
  app.add_option("file", files_, "JSONL metrics files (one JSON object per line); several are overlaid, labelled")
      ->required()
      ->type_name("FILE");
  app.add_option("-k,--key", keys_, "Metric to plot; repeat for several on one plot (default: loss)")->type_name("KEY");
  app.add_option("--width", width_, "Plot columns (default 72)")->type_name("N")->check(CLI::Range(8, 1000));
  app.add_option("--height", height_, "Plot rows (default 16)")->type_name("N")->check(CLI::Range(3, 1000));
  app.add_flag("--list", list_, "List the files' numeric metrics instead of plotting");
  app.footer(
      "Reads the JSONL files ezpz's History writes (C++ or Python ezpz: {\"metrics\": {...},\n"
      "\"aggregated\": {...}}) and any other JSONL with numeric fields; nested objects become a/b.\n"
      "The x axis is the iter (or step, epoch) field when the records have one. Several files are\n"
      "drawn on one plot, each labelled by the part of its path the others do not share.\n\n"
      "Examples:\n"
      "  ezpz plot outputs/ezpz-test/history/*/*.jsonl --key loss\n"
      "  ezpz plot metrics.jsonl -k loss/mean -k loss/max");
}

namespace {

/// One file's series for `keys`, labelled `label` (and the key, when several).
Expected<std::vector<core::PlotSeries>> file_series(const core::MetricTable& table, const std::string& file,
                                                    const std::string& label, const std::vector<std::string>& keys) {
  std::vector<core::PlotSeries> series;
  for (const auto& key : keys) {
    if (!table.has(key)) {
      return usage_error(file + " has no metric \"" + key + "\": it has " + core::join(table.keys, ", ") +
                         " (pick one with --key)");
    }
    const auto name = label.empty() ? key : keys.size() == 1 ? label : label + " " + key;
    series.push_back({name, table.series(key)});
  }
  return series;
}

void print_summaries(Terminal& term, const std::vector<core::PlotSeries>& series) {
  for (const auto& s : series) {
    std::vector<double> ys;
    for (const auto& [x, y] : s.points) {
      ys.push_back(y);
    }
    const auto st = core::summarize(ys);
    char line[256];
    std::snprintf(line, sizeof(line), ": %zu points, first %.6g, last %.6g, min %.6g, max %.6g\n", ys.size(),
                  ys.front(), ys.back(), st.min, st.max);
    term.out() << s.label << line;
  }
}

}  // namespace

int PlotCommand::run(Context& ctx) {
  // 1. Read every file.
  std::vector<core::ParsedTable> tables;
  for (const auto& file : files_) {
    auto text = ctx.probe().read_file(file);
    if (!text) {
      return ctx.term.fail(text.error());
    }
    auto parsed = core::parse_metrics_jsonl(*text, file);
    if (!parsed) {
      return ctx.term.fail(parsed.error());
    }
    if (parsed->skipped_lines > 0) {
      ctx.term.warn(std::to_string(parsed->skipped_lines) + (parsed->skipped_lines == 1 ? " line" : " lines") + " of " +
                    file + " held no JSON object with numbers and " + (parsed->skipped_lines == 1 ? "was" : "were") +
                    " skipped");
    }
    tables.push_back(std::move(*parsed));
  }
  // 2. List the metrics, or plot the keys of every file on one plot, labelled.
  if (list_) {
    for (std::size_t i = 0; i < files_.size(); ++i) {
      for (const auto& k : tables[i].table.keys) {
        ctx.term.out() << (files_.size() > 1 ? files_[i] + ": " : "") << k << '\n';
      }
    }
    return 0;
  }
  const auto keys = keys_.empty() ? std::vector<std::string>{"loss"} : keys_;
  const auto labels = core::distinct_labels(files_);
  std::vector<core::PlotSeries> series;
  for (std::size_t i = 0; i < files_.size(); ++i) {
    auto more = file_series(tables[i].table, files_[i], files_.size() > 1 ? labels[i] : "", keys);
    if (!more) {
      return ctx.term.fail(more.error());
    }
    series.insert(series.end(), more->begin(), more->end());
  }
  core::PlotOptions options;
  options.width = width_;
  options.height = height_;
  options.title = files_.size() == 1 ? files_.front() : std::to_string(files_.size()) + " files";
  ctx.term.out() << core::render_plot(series, options);
  print_summaries(ctx.term, series);
  return 0;
}

}  // namespace ezpz::cli
