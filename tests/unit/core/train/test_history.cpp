#include <catch2/catch.hpp>

#include "core/train/history.hpp"

using namespace ezpz::core;

TEST_CASE("cross-rank statistics use the population std", "[history]") {
  auto s = summarize({1, 2, 3, 4});
  CHECK(s.mean == Approx(2.5));
  CHECK(s.min == 1);
  CHECK(s.max == 4);
  CHECK(s.std == Approx(1.118034).epsilon(1e-6));
  auto names = aggregated_names({{"loss", 1.0}}, {s});
  REQUIRE(names.size() == 4);
  CHECK(names[0].first == "loss/mean");
  CHECK(names[3].first == "loss/std");
}

TEST_CASE("records are one JSON object per line in Python ezpz's layout", "[history]") {
  auto line = jsonl_record(12.5, 0, {{"iter", 3}, {"loss", 0.25}}, {{"loss/mean", 0.5}});
  CHECK(line ==
        "{\"timestamp\": 12.500000, \"rank\": 0, \"metrics\": {\"iter\": 3, \"loss\": 0.25}, "
        "\"aggregated\": {\"loss/mean\": 0.5}}\n");
  CHECK(format_metrics({{"iter", 3}, {"loss", 0.125}}) == "iter=3 loss=0.125");
}

TEST_CASE("JSONL parsing is lenient and flattens ezpz's nesting", "[history]") {
  const std::string text =
      "{\"timestamp\": 1.0, \"rank\": 0, \"metrics\": {\"iter\": 1, \"loss\": 2.0, \"tag\": \"x\"}, "
      "\"aggregated\": {\"loss/mean\": 2.5}}\n"
      "not json\n"
      "\n"
      "{\"iter\": 2, \"loss\": 1.0, \"acc\": [0.5, 1.0], \"train\": {\"lr\": 0.1}}\n"
      "[1, 2]\n";
  auto parsed = parse_metrics_jsonl(text, "m.jsonl");
  REQUIRE(parsed);
  CHECK(parsed->skipped_lines == 2);
  const auto& t = parsed->table;
  REQUIRE(t.rows.size() == 2);
  CHECK(t.has("loss/mean"));
  CHECK(t.has("train/lr"));
  CHECK_FALSE(t.has("tag"));
  CHECK(t.rows[1].at("acc") == Approx(0.75));
  auto loss = t.series("loss");
  REQUIRE(loss.size() == 2);
  CHECK(loss[0] == std::pair<double, double>{1, 2.0});
  CHECK(loss[1] == std::pair<double, double>{2, 1.0});
  auto empty = parse_metrics_jsonl("hello\n[]\n", "bad.jsonl");
  REQUIRE_FALSE(empty);
  CHECK_THAT(empty.error().message, Catch::Contains("bad.jsonl has no lines holding a JSON object"));
}

TEST_CASE("the terminal plot puts the extremes on the top and bottom rows", "[history]") {
  PlotOptions o;
  o.width = 20;
  o.height = 5;
  o.title = "loss";
  auto text = render_plot({{"loss", {{0, 4.0}, {1, 3.0}, {2, 1.0}}}}, o);
  auto lines = std::vector<std::string>{};
  std::string cur;
  for (char c : text) {
    if (c == '\n') {
      lines.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  REQUIRE(lines.size() >= 8);
  CHECK(lines[0] == "loss");
  CHECK(lines[1].find("4 |*") != std::string::npos);  // first point: top-left
  CHECK(lines[5].back() == '*');                      // last point: bottom-right
  CHECK(render_plot({}, o).find("(no data)") != std::string::npos);
}

TEST_CASE("the markdown report summarises every metric", "[history]") {
  MetricTable t;
  t.keys = {"iter", "loss"};
  t.rows = {{{"iter", 1}, {"loss", 3}}, {{"iter", 2}, {"loss", 1}}};
  auto md = markdown_report(t, "run");
  CHECK_THAT(md, Catch::Contains("# run"));
  CHECK_THAT(md, Catch::Contains("| loss | 1 | 2 | 1 | 3 | 1 |"));
}

TEST_CASE("plot labels tell files apart by what their paths do not share", "[history]") {
  using ezpz::core::distinct_labels;
  using V = std::vector<std::string>;
  CHECK(distinct_labels({"a/metrics.jsonl"}) == V{"a/metrics.jsonl"});
  CHECK(distinct_labels({"out/h/run-1/metrics.jsonl", "out/h/run-2/metrics.jsonl"}) == V{"run-1", "run-2"});
  // ezpz History's own layout: <run>/<run>.jsonl
  CHECK(distinct_labels(
            {"o/history/20261125-084253/20261125-084253.jsonl", "o/history/20261125-084304/20261125-084304.jsonl"}) ==
        V{"20261125-084253", "20261125-084304"});
  CHECK(distinct_labels({"x.jsonl", "y.jsonl"}) == V{"x", "y"});
  CHECK(distinct_labels({"a/x.jsonl", "b/c/x.jsonl"}) == V{"a", "b/c"});
  CHECK(distinct_labels({"one/m.jsonl", "two/m.json"}) == V{"one/m.jsonl", "two/m.json"});
}
