// yeet's other nodes: the copy (or the delta) streamed through the relay tree with a live view,
// then the repair the plan says from a peer, as data (core::plan_repair, core::apply_repair).
#include <algorithm>
#include <tuple>

#include "cli/terminal.hpp"
#include "cli/yeet_steps.hpp"
#include "core/base/log.hpp"
#include "core/base/strings.hpp"

namespace ezpz::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// The relay tree pass with a live view: on a terminal one redrawn line (bytes, nodes done,
/// aggregate rate, who is slowest); else a line a node.
std::vector<core::NodeResult> stream_with_view(YeetRun& run) {
  auto& ctx = run.ctx;
  const auto& nodes = run.report.nodes;
  const auto& targets = nodes.targets;
  const auto start = Clock::now();
  ProgressBar bar(ctx.term, "streaming", 0);
  std::size_t done_nodes = 0;
  std::size_t failed_nodes = 0;
  std::vector<std::string> waiting(targets.begin(), targets.end());
  unsigned long long streamed = 0;
  auto draw = [&] {
    const double secs = std::max(seconds_since(start), 1e-3);
    const auto receiving = targets.size() - failed_nodes;
    const auto rate = static_cast<double>(streamed) * static_cast<double>(receiving) / secs;
    bar.update(streamed, ", " + std::to_string(done_nodes) + "/" + std::to_string(targets.size()) +
                             " nodes done, aggregate " + core::human_bytes(static_cast<unsigned long long>(rate)) +
                             "/s" + (waiting.empty() ? std::string() : ", slowest: " + waiting.front()));
  };
  auto on_result = [&](const core::NodeResult& r) {
    log::info(r.host + ": " + std::string(core::to_string(r.outcome)) + " after " + fixed1(r.seconds) + " s" +
              (r.reattached_to.empty() ? std::string() : ", re-attached to " + r.reattached_to) +
              (r.error.empty() ? std::string() : ": " + r.error));
    ++done_nodes;
    failed_nodes += r.ok() ? 0 : 1;
    waiting.erase(std::remove(waiting.begin(), waiting.end(), r.host), waiting.end());
    if (ctx.term.interactive()) {
      draw();
    } else {
      ctx.term.err() << "  " << r.host << (r.ok() ? " done in " + fixed1(r.seconds) + "s" : " failed: " + r.error)
                     << " (" << done_nodes << "/" << targets.size() << ")\n";
    }
  };
  const auto& plan = run.plan();
  auto results = ctx.broadcaster().broadcast(
      run.bundle.empty() ? plan.destination : run.bundle, plan.name, nodes.tree, nodes.spec,
      [&](unsigned long long done) {
        streamed = done;
        draw();
      },
      on_result, &run.report.stream);
  if (ctx.term.interactive()) {
    ctx.term.err() << "\r\033[K" << std::flush;
  }
  return results;
}

}  // namespace

void start_nodes(YeetRun& run) {
  auto& ctx = run.ctx;
  const auto& nodes = run.report.nodes;
  if (nodes.targets.empty() || run.reached.held()) {
    return;
  }
  // In the background, while this node builds its copy: reach the nodes (the launcher
  // transport's agents start, one launcher step, and call back), then the relay tree's relays
  // start (connect, log in, ship ezpz) and wait for the stream.
  const bool tree = nodes.strategy != core::Strategy::greedy;
  ctx.broadcaster().start_nodes(nodes.targets, tree ? nodes.tree : std::vector<core::RelayNode>{}, nodes.spec);
  run.reached.hold(ctx.broadcaster());
}

void send_to_nodes(YeetRun& run) {
  auto& ctx = run.ctx;
  auto& report = run.report;
  const auto& nodes = report.nodes;
  const auto start = Clock::now();
  // 0. Reach, unless install_here did meanwhile; a node without an agent fails as an unreachable
  //    node does (its subtree re-attached).
  start_nodes(run);
  for (const auto& step : ctx.broadcaster().start_steps()) {  // in the background since install_here began
    report.steps.push_back(step);
  }
  if (const auto unreachable = ctx.broadcaster().nodes_opened();
      !unreachable.empty() && ctx.staging().interrupted() == 0) {
    ctx.term.warn(core::count_of(unreachable.size(), "node has", "nodes have") +
                  " no agent: " + unreachable.begin()->first + ": " + unreachable.begin()->second);
  }
  // 1. The pass: through the relay tree, or ezpz's store-and-forward for comparison.
  report.remote = nodes.strategy == core::Strategy::greedy
                      ? ctx.broadcaster().greedy_broadcast(nodes.targets, nodes.spec, 8)
                      : stream_with_view(run);
  if (!run.bundle.empty()) {
    ctx.staging().discard(run.bundle);
  }
  // 2. The repair: orphaned nodes and those the delta could not update, from a node that has it.
  const auto repair = core::plan_repair(report.remote, nodes, report.host, ctx.staging().interrupted() != 0);
  report.full_copies = repair.full_copies;
  if (!repair.empty()) {
    log::info("yeet: repair of " + core::join(repair.hosts, ",") + " from " + repair.from +
              (repair.from_peer ? " (a node that has the copy)" : " (this node)"));
    ctx.term.warn(core::count_of(repair.hosts.size(), "node") + " lost " +
                  (repair.hosts.size() == 1 ? "its relay or needs" : "their relay or need") +
                  " a full copy: sending from " + repair.from);
    const auto& plan = run.plan();
    auto again = repair.from_peer ? ctx.broadcaster().send_from_peer(repair.from, repair.tree, nodes.spec, {})
                                  : ctx.broadcaster().broadcast(plan.destination, plan.name, repair.tree, nodes.spec,
                                                                {}, {}, nullptr);
    core::apply_repair(report.remote, again, repair);
  }
  run.reached.let_go();  // the launcher transport's agents stop
  report.steps.emplace_back("broadcast_s", seconds_since(start));
}

}  // namespace ezpz::cli
