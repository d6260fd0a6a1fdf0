#include "cli/plot.hpp"

#include <cstdio>

#include <CLI/App.hpp>
#include <CLI/Validators.hpp>

#include "cli/terminal.hpp"
#include "core/history.hpp"
#include "core/strings.hpp"

namespace ezpz::cli {

void PlotCommand::add_cli(CLI::App& app) {
  app.add_option("file", file_, "JSONL metrics file (one JSON object per line)")->required()->type_name("FILE");
  app.add_option("-k,--key", keys_, "Metric to plot; repeat for several on one plot (default: loss)")->type_name("KEY");
  app.add_option("--width", width_, "Plot columns (default 72)")->type_name("N")->check(CLI::Range(8, 1000));
  app.add_option("--height", height_, "Plot rows (default 16)")->type_name("N")->check(CLI::Range(3, 1000));
  app.add_flag("--list", list_, "List the file's numeric metrics instead of plotting");
  app.footer(
      "Reads the JSONL files ezpz's History writes (C++ or Python ezpz: {\"metrics\": {...},\n"
      "\"aggregated\": {...}}) and any other JSONL with numeric fields; nested objects become a/b.\n"
      "The x axis is the iter (or step, epoch) field when the records have one.\n\n"
      "Examples:\n"
      "  ezpz plot outputs/ezpz-test/history/*/*.jsonl --key loss\n"
      "  ezpz plot metrics.jsonl -k loss/mean -k loss/max");
}

int PlotCommand::run(Context& ctx) {
  auto text = ctx.probe().read_file(file_);
  if (!text) {
    return ctx.term.fail(text.error());
  }
  auto parsed = core::parse_metrics_jsonl(*text, file_);
  if (!parsed) {
    return ctx.term.fail(parsed.error());
  }
  const auto& table = parsed->table;
  if (list_) {
    for (const auto& k : table.keys) {
      ctx.term.out() << k << '\n';
    }
    return 0;
  }
  auto keys = keys_.empty() ? std::vector<std::string>{"loss"} : keys_;
  std::vector<core::PlotSeries> series;
  for (const auto& key : keys) {
    if (!table.has(key)) {
      return ctx.term.fail(usage_error(file_ + " has no metric \"" + key + "\": it has " +
                                       core::join(table.keys, ", ") + " (pick one with --key)"));
    }
    series.push_back({key, table.series(key)});
  }
  core::PlotOptions options;
  options.width = width_;
  options.height = height_;
  options.title = file_;
  ctx.term.out() << core::render_plot(series, options);
  for (const auto& s : series) {
    std::vector<double> ys;
    for (const auto& [x, y] : s.points) {
      ys.push_back(y);
    }
    const auto st = core::summarize(ys);
    char line[256];
    std::snprintf(line, sizeof(line), "%s: %zu points, first %.6g, last %.6g, min %.6g, max %.6g\n", s.label.c_str(),
                  ys.size(), ys.front(), ys.back(), st.min, st.max);
    ctx.term.out() << line;
  }
  if (parsed->skipped_lines > 0) {
    ctx.term.warn(std::to_string(parsed->skipped_lines) + " line(s) of " + file_ +
                  " held no JSON object with numbers and were skipped");
  }
  return 0;
}

}  // namespace ezpz::cli
