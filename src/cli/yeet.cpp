#include "cli/yeet.hpp"

#include <tuple>

#include <CLI/App.hpp>
#include <CLI/Validators.hpp>
#include <nlohmann/json.hpp>

#include "cli/reach_options.hpp"
#include "cli/terminal.hpp"
#include "cli/yeet_report.hpp"
#include "cli/yeet_steps.hpp"
#include "core/base/log.hpp"
#include "core/base/strings.hpp"
#include "core/reach/agents.hpp"
#include "core/reach/reach.hpp"
#include "core/yeet/broadcast_spec.hpp"
#include "core/yeet/node_plan.hpp"
#include "core/yeet/outcome.hpp"
#include "core/yeet/relay_tree.hpp"

namespace ezpz::cli {

void YeetCommand::add_cli(CLI::App& app) {
  app_ = &app;
  app.add_option("source", positional_,
                 "Directory or .tar.gz/.tgz/.tar.zst/.tar.xz/.tar to copy (default: the active env)")
      ->type_name("PATH");
  app.add_option("--src", src_, "The same as SOURCE")->type_name("PATH");
  app.add_option("--dst", dst_,
                 "Destination directory (default /tmp/$USER/<name>-<hash of the source's path>, or [yeet] "
                 "destination in config.toml)")
      ->type_name("DIR");
  app.add_flag("--where", where_,
               "Print the destination this yeet uses (for a job script: source \"$(ezpz yeet --where)/bin/activate\") "
               "and exit; copy nothing");
  app.add_flag("--copy", copy_, "Copy everything (first copy; no comparison with an existing destination)");
  app.add_flag("--compress", compress_, "Pack once to a zstd tarball, then extract it (least metadata I/O)");
  app.add_flag("--include-pycache", include_pycache_, "Copy __pycache__ directories too (skipped by default)");
  app.add_flag("--force", force_,
               "Replace a destination yeet did not make (a file, a link, a directory that is not an env), "
               "or one outside /tmp, /dev/shm, /local, /raid and configured roots");
  app.add_flag("--dry-run", dry_run_,
               "Say what would be written and removed (here, and for other nodes what changed); "
               "transfer nothing");
  app.add_flag("--full", full_, "Send other nodes everything, not only what changed since the last yeet");
  app.add_flag("--json", json_, "Print a JSON summary on stdout instead of text");
  app.add_option("--hostfile", reach_.hostfile, "Nodes to copy to (default: the job's, as for launch)")
      ->type_name("FILE");
  app.add_option("--fanout", fanout_, "Nodes each relay feeds in the streaming tree (default 2)")
      ->type_name("N")
      ->check(CLI::Range(1, 64));
  app.add_option("--strategy", strategy_,
                 "tree: stream through relays (default); greedy: ezpz's store-and-forward, 8 per source")
      ->check(CLI::IsMember({"tree", "greedy"}));
  app.add_flag("--no-encrypt", no_encrypt_,
               "Streams over TCP (the launcher transport's; the built-in ssh one's): authenticate every frame but "
               "send the data unencrypted (faster on a trusted network)");
  app.add_option("--stream-level", stream_level_,
                 "zstd level of the stream to other nodes, 1-19 (default: adaptive, from none through zstd's "
                 "fast levels to 9, following the link)")
      ->type_name("N")
      ->check(CLI::Range(1, 19));
  app.add_flag("--no-reattach", no_reattach_,
               "Do not re-attach a failed relay's nodes mid-stream; repair them from a peer after the pass");
  app.add_option("--stall-timeout", stall_timeout_s_,
                 "Drop a node that takes no data for this many seconds mid-stream, or is not ready this long "
                 "after its parent's start (default 30); its nodes are re-attached")
      ->type_name("S")
      ->check(CLI::Range(1.0, 3600.0));
  app.add_option("--max-bytes", max_bytes_,
                 "Refuse a tarball source that holds more than this (e.g. 20G); the free space is always checked")
      ->type_name("SIZE")
      ->transform(CLI::AsSizeValue(false));
  add_reach_options(app, reach_, "");
  app.add_option("--min-success-nodes", min_success_nodes_, "Succeed when at least N nodes have the copy")
      ->type_name("N");
  app.add_option("--min-success-fraction", min_success_fraction_,
                 "Succeed when at least this fraction of the nodes have the copy")
      ->type_name("F");
  for (const char* expert :
       {"--fanout", "--strategy", "--no-encrypt", "--stream-level", "--no-reattach", "--stall-timeout", "--max-bytes",
        "--no-hsn", "--min-success-nodes", "--min-success-fraction"}) {
    app.get_option(expert)->group("Expert options");  // help lists them last, under their own heading
  }
  app.footer(
      "Without --copy or --compress, only files whose size or mtime changed are copied and files gone\n"
      "from the source are removed. Work happens beside the destination and replaces it only when\n"
      "complete; a failed or interrupted yeet leaves the previous destination as it was.\n\n"
      "Examples:\n"
      "  ezpz yeet                         # the active venv -> /tmp/$USER/<name>-<hash>/\n"
      "  source \"$(ezpz yeet --where)/bin/activate\"\n"
      "  ezpz yeet --compress              # first copy off a slow shared filesystem\n"
      "  ezpz yeet env.tar.zst --dst /tmp/env\n"
      "  ezpz yeet ~/models/llama --dry-run");
}

Expected<core::YeetRequest> YeetCommand::request() const {
  if (app_->count("source") > 0 && app_->count("--src") > 0) {
    return usage_error("--src and positional SRC are mutually exclusive; pick one");
  }
  core::YeetRequest request;
  if (!positional_.empty() || !src_.empty()) {
    request.source = positional_.empty() ? src_ : positional_;
  }
  if (!dst_.empty()) {
    request.destination = dst_;
  }
  request.copy = copy_;
  request.compress = compress_;
  request.include_pycache = include_pycache_;
  request.force = force_;
  return request;
}

Expected<core::BroadcastPlan> YeetCommand::plan_nodes(Context& ctx, const core::YeetPlan& plan,
                                                      const std::string& host) const {
  core::SuccessRule rule;
  if (app_->count("--min-success-nodes") > 0) {
    rule.min_nodes = min_success_nodes_;
  }
  if (app_->count("--min-success-fraction") > 0) {
    rule.min_fraction = min_success_fraction_;
  }
  EZPZ_TRY(core::check_success_rule(rule));  // a usage error before any host is read
  // The other nodes: the job's hosts (as for launch) less this one; how they are reached.
  auto options = reach_;
  options.leave_out_down = true;  // a node the scheduler has down is named and left out, not waited for
  EZPZ_TRY_ASSIGN(auto reach, core::plan_reach_spec(options, ctx.env, ctx.probe()));
  core::BroadcastSpec spec;
  spec.reach = reach.spec;
  spec.reach.encrypt = !no_encrypt_;
  spec.reach.agent_timeout_s = std::max(60.0, stall_timeout_s_);
  spec.destination = plan.destination;
  spec.stream_level = stream_level_;
  spec.reattach = !no_reattach_;
  spec.force = force_;
  spec.stall_timeout_s = stall_timeout_s_;
  spec.this_host = host;
  spec.log_level = log::level_name();  // -v: the relays say their steps too
  const auto strategy = strategy_ == "greedy" ? core::Strategy::greedy : core::Strategy::tree;
  auto nodes = core::plan_broadcast(std::move(reach.reach.targets), fanout_, strategy, rule, std::move(spec));
  if (nodes) {
    for (const auto& d : reach.reach.down) {  // a node the scheduler has down: named, not waited for
      const auto why = d.state + (d.reason.empty() ? "" : ": " + d.reason);
      if (std::find(nodes->targets.begin(), nodes->targets.end(), d.host) == nodes->targets.end()) {
        nodes->left_out.push_back(d);
        ++nodes->total_nodes;
        ctx.term.warn(d.host + " is down (the scheduler says " + why + "): left out; the other nodes get the copy");
      } else {
        ctx.term.warn(d.host + " is down (the scheduler says " + why + "): its copy will likely fail");
      }
    }
    nodes->transport_why = reach.reach.choice.why;
    log::info("yeet: " + core::count_of(nodes->targets.size(), "other node") + " through " +
              core::reach_transport_text(reach) + " (" + nodes->transport_why +
              "); tree: " + core::encode_tree(nodes->tree));
  }
  return nodes;
}

Expected<std::pair<core::YeetPlan, core::SourceFacts>> YeetCommand::plan_here(
    Context& ctx, const core::YeetSettings& settings) const {
  EZPZ_TRY_ASSIGN(auto req, request());
  if (!settings.destination.empty()) {
    req.destination_pattern = settings.destination;
  }
  EZPZ_TRY_ASSIGN(auto source, core::yeet_source(req, ctx.env));
  std::string source_path = source.first;
  if (source_path.front() != '/') {
    source_path = ctx.env.get("PWD").value_or("/") + "/" + source_path;
  }
  auto facts = ctx.trees().inspect(source_path);
  EZPZ_TRY_ASSIGN(auto plan, core::plan_yeet(req, ctx.env, facts));
  plan.source_origin = req.source ? (positional_.empty() ? "--src" : "SRC") : source.second;
  return std::make_pair(std::move(plan), std::move(facts));
}

Expected<YeetRun> YeetCommand::plan(Context& ctx) const {
  EZPZ_TRY_ASSIGN(auto settings, core::yeet_settings(ctx.env, ctx.probe()));
  EZPZ_TRY_ASSIGN(auto here, plan_here(ctx, settings));
  auto& [plan, facts] = here;
  ctx.term.set_unchanged({plan.destination});  // until the commit, a failure leaves it as it was
  if (dst_.empty() && !dry_run_) {             // the default's /tmp/<user>: made private, or refused when another's
    const auto parent = plan.destination.substr(0, plan.destination.rfind('/'));
    if (auto made = ctx.probe().make_dirs(parent.empty() ? "/" : parent); !made) {
      return failure(made.error().message + "; or pass --dst DIR ([yeet] destination in config.toml sets the default)");
    }
  }
  EZPZ_TRY(core::check_destination(plan.destination, facts.real_path, ctx.env, settings.allowed_roots, force_));
  // What is there now: yeet replaces only its own copies and envs (unless --force), and only
  // what this user may move aside; the nodes check the same before they touch anything.
  const auto user = ctx.env.get("USER").value_or("");
  EZPZ_TRY(
      core::check_replaceable(plan.destination, ctx.trees().inspect_destination(plan.destination), force_, "", user));
  YeetRun run{ctx, {}, facts.real_path, max_bytes_, std::nullopt, {}, {}, {}, {plan.destination, force_, "", user}};
  run.report.host = ctx.env.hostname.empty() ? "localhost" : ctx.env.hostname;
  EZPZ_TRY_ASSIGN(auto nodes, plan_nodes(ctx, plan, run.report.host));
  EZPZ_TRY_ASSIGN(auto size, ctx.trees().measure(plan.source, plan.excludes));
  run.report.plan = std::move(plan);
  run.report.nodes = std::move(nodes);
  run.report.size = size;
  run.report.dry_run = dry_run_;
  return run;
}

void YeetCommand::find_base(YeetRun& run) const {
  // Incremental: the copy this node made last time, when it still is what its manifest says;
  // other nodes then get only what changed (tree strategy).
  auto& report = run.report;
  const bool nodes = !report.nodes.targets.empty();
  report.full_reason = full_ ? "--full" : !nodes ? "" : strategy_ == "greedy" ? "--strategy greedy" : "";
  if (nodes && report.full_reason.empty()) {
    if (auto held = run.ctx.manifests().held_manifest(report.plan.destination)) {
      run.base = std::move(*held);
    } else {
      report.full_reason = held.error().message;
    }
  }
  report.delta = run.base.has_value();
  // --dry-run: what would change, against the manifest of the last yeet here (for this node
  // alone too: what would be written and removed).
  if (dry_run_ && run.base && report.plan.kind == core::SourceKind::directory) {
    report.estimate_tried = true;
    if (auto est = run.ctx.manifests().estimate_changes(report.plan.source, report.plan.excludes, run.base->manifest)) {
      report.estimate = *est;
    }
  } else if (dry_run_ && !nodes && report.plan.kind == core::SourceKind::directory &&
             report.plan.method == core::CopyMethod::sync && run.ctx.trees().inspect(report.plan.destination).exists) {
    report.estimate_tried = true;  // this node alone: what syncing the destination would write and remove
    if (auto est = run.ctx.trees().estimate_sync(report.plan.source, report.plan.destination, report.plan.excludes)) {
      report.estimate = *est;
    }
  }
}

int YeetCommand::finish(YeetRun& run) const {
  auto& ctx = run.ctx;
  auto& report = run.report;
  if (const int sig = ctx.staging().interrupted()) {
    ctx.term.error("interrupted: relays stopped; nodes that had not finished kept their previous copy");
    return 128 + sig;
  }
  report.ran = true;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - run.started).count();
  for (const auto& b : report.patch.binary_prefix) {
    ctx.term.warn("binary file " + report.plan.destination + "/" + b + " still names " + report.patch.old_prefix +
                  " (left untouched; rebuild it or keep the old path available)");
  }
  for (const auto& d : report.nodes.left_out) {
    core::NodeResult down;
    down.host = d.host;
    down.error = "down (the scheduler says " + d.state + (d.reason.empty() ? "" : ": " + d.reason) + "): left out";
    report.remote.push_back(std::move(down));
  }
  report.tally = core::tally(report.remote, report.nodes);
  // ezpz's sentinel: removed, then written only when some nodes failed but the threshold held.
  report.sentinel = report.plan.destination + "/.ezpz-yeet-failed-nodes.txt";
  ctx.staging().discard(report.sentinel);
  if (!report.tally.failed.empty() && report.tally.threshold_met) {
    if (auto w = ctx.probe().write_file(report.sentinel, core::join(report.tally.failed, "\n") + "\n"); !w) {
      ctx.term.warn(w.error().message);
    }
  }
  show_leftovers(ctx);
  if (json_) {
    ctx.term.print_json(to_json(report).dump());
  } else {
    print_yeet_report(ctx.term.out(), report);
  }
  return report.tally.threshold_met ? 0 : static_cast<int>(ExitCode::failure);
}

int YeetCommand::where(Context& ctx) const {
  auto settings = core::yeet_settings(ctx.env, ctx.probe());
  if (!settings) {
    return ctx.term.fail(settings.error());
  }
  auto here = plan_here(ctx, *settings);
  if (!here) {
    return ctx.term.fail(here.error());
  }
  if (json_) {
    ctx.term.print_json(nlohmann::json{{"destination", here->first.destination}}.dump());
  } else {
    ctx.term.out() << here->first.destination << "\n";
  }
  return 0;
}

int YeetCommand::run(Context& ctx) {
  // 0. --where: only the destination, for a job script.
  if (where_) {
    return where(ctx);
  }
  // 1. Plan: what, where, which nodes through which tree, how many must succeed (core, pure).
  auto run = plan(ctx);
  if (!run) {
    return ctx.term.fail(run.error());
  }
  // 2. What this node's last copy lets the other nodes skip; say the plan.
  find_base(*run);
  if (!json_) {
    print_plan(ctx.term.out(), run->report);
  }
  // 3. --dry-run stops here.
  if (dry_run_) {
    if (json_) {
      ctx.term.print_json(to_json(run->report).dump());
    } else {
      ctx.term.out() << "[dry-run] nothing transferred\n";
    }
    return 0;
  }
  // 4. This node: the new tree beside the destination, patched, put in place.
  if (auto rc = install_here(*run)) {
    return *rc;
  }
  // 5. Every other node: stream it through the relay tree, then repair from a peer.
  if (!run->report.nodes.targets.empty()) {
    send_to_nodes(*run);
  }
  // 6. The tally against the threshold, the failed-nodes file, the report.
  return finish(*run);
}

}  // namespace ezpz::cli
