#include "cli/yeet.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <tuple>

#include <CLI/App.hpp>
#include <CLI/Validators.hpp>
#include <nlohmann/json.hpp>

#include "cli/terminal.hpp"
#include "cli/yeet_relay.hpp"
#include "cli/yeet_report.hpp"
#include "core/broadcast.hpp"
#include "core/cluster.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"

namespace ezpz::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// Removals that failed (what is left must be removed by hand): a warning line each.
void show_leftovers(Context& ctx) {
  for (const auto& w : ctx.transfer.take_warnings()) {
    ctx.term.warn(w);
  }
}

/// Old prefixes a moved env may name: what bin/activate records, the source as given and resolved.
std::vector<std::string> old_prefixes(Context& ctx, const std::string& root, const core::YeetPlan& plan,
                                      const std::string& source_real) {
  std::vector<std::string> out;
  auto add = [&](const std::string& p) {
    if (!p.empty() && p != plan.destination && std::find(out.begin(), out.end(), p) == out.end()) {
      out.push_back(p);
    }
  };
  if (auto recorded = ctx.transfer.recorded_prefix(root)) {
    add(*recorded);
  }
  if (plan.kind == core::SourceKind::directory) {
    add(plan.source);
    add(source_real);
  }
  return out;
}

}  // namespace

void YeetCommand::add_cli(CLI::App& app) {
  app_ = &app;
  app.add_option("source", positional_,
                 "Directory or .tar.gz/.tgz/.tar.zst/.tar.xz/.tar to copy (default: the active env)")
      ->type_name("FILE");
  app.add_option("--src", src_, "The same as SRC")->type_name("FILE");
  app.add_option("--dst", dst_, "Destination (default /tmp/<name>)")->type_name("FILE");
  app.add_flag("--copy", copy_, "Copy everything (first copy; no comparison with an existing destination)");
  app.add_flag("--compress", compress_, "Pack once to a zstd tarball, then extract it (least metadata I/O)");
  app.add_flag("--include-pycache", include_pycache_, "Copy __pycache__ directories too (skipped by default)");
  app.add_flag("--force", force_, "Allow a destination outside /tmp, /dev/shm, /local, /raid and configured roots");
  app.add_flag("--dry-run", dry_run_, "Show what would happen (for other nodes: what changed); transfer nothing");
  app.add_flag("--full", full_, "Send other nodes everything, not only what changed since the last yeet");
  app.add_flag("--json", json_, "Print a JSON summary on stdout instead of text");
  app.add_option("--hostfile", hostfile_, "Nodes to copy to (default: the job's, as for launch)")->type_name("FILE");
  app.add_option("--fanout", fanout_, "Nodes each relay feeds in the streaming tree (default 2)")
      ->type_name("N")
      ->check(CLI::Range(1, 64));
  app.add_option("--strategy", strategy_,
                 "tree: stream through relays (default); greedy: ezpz's store-and-forward, 8 per source")
      ->check(CLI::IsMember({"tree", "greedy"}));
  app.add_option("--ssh-command", ssh_command_,
                 "Reach the nodes with this ssh client (e.g. ssh, for host-based or GSSAPI login) instead of the "
                 "built-in libssh")
      ->type_name("CMD");
  app.add_flag("--accept-new-host-keys", accept_new_host_keys_,
               "Add host keys of nodes not yet in ~/.ssh/known_hosts (a changed key is always an error)");
  app.add_option("--stream-level", stream_level_,
                 "zstd level of the stream to other nodes, 1-19 (default: adaptive, 1-9, following the link)")
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
  app.add_flag("--no-hsn", no_hsn_, "Use the hostfile's names, not <host>-hsn0 when that resolves");
  app.add_option("--min-success-nodes", min_success_nodes_, "Succeed when at least N nodes have the copy")
      ->type_name("N");
  app.add_option("--min-success-fraction", min_success_fraction_,
                 "Succeed when at least this fraction of the nodes have the copy")
      ->type_name("F");
  app.footer(
      "Without --copy or --compress, only files whose size or mtime changed are copied and files gone\n"
      "from the source are removed. Work happens beside the destination and replaces it only when\n"
      "complete; a failed or interrupted yeet leaves the previous destination as it was.\n\n"
      "Examples:\n"
      "  ezpz yeet                         # the active venv -> /tmp/<name>/\n"
      "  ezpz yeet --compress              # first copy off a slow shared filesystem\n"
      "  ezpz yeet env.tar.zst --dst /tmp/env\n"
      "  ezpz yeet ~/models/llama --dry-run");
}

int YeetCommand::run(Context& ctx) {
  if (app_->count("source") > 0 && app_->count("--src") > 0) {
    return ctx.term.fail(usage_error("--src and positional SRC are mutually exclusive; pick one"));
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

  // 1. What and where.
  auto source = core::yeet_source(request, ctx.env);
  if (!source) {
    return ctx.term.fail(source.error());
  }
  std::string source_path = source->first;
  if (source_path.front() != '/') {
    source_path = ctx.env.get("PWD").value_or("/") + "/" + source_path;
  }
  const auto facts = ctx.transfer.inspect(source_path);
  auto plan = core::plan_yeet(request, ctx.env, facts);
  if (!plan) {
    return ctx.term.fail(plan.error());
  }
  plan->source_origin = request.source ? (positional_.empty() ? "--src" : "SRC") : source->second;
  ctx.term.set_unchanged({plan->destination});  // until the commit below, a failure leaves it as it was
  auto roots = core::load_yeet_roots(ctx.env, ctx.probe);
  if (!roots) {
    return ctx.term.fail(roots.error());
  }
  if (auto ok = core::check_destination(plan->destination, facts.real_path, ctx.env, *roots, force_); !ok) {
    return ctx.term.fail(ok.error());
  }
  core::SuccessRule rule;
  if (app_->count("--min-success-nodes") > 0) {
    rule.min_nodes = min_success_nodes_;
  }
  if (app_->count("--min-success-fraction") > 0) {
    rule.min_fraction = min_success_fraction_;
  }
  if (auto ok = core::check_success_rule(rule); !ok) {
    return ctx.term.fail(ok.error());
  }
  // The other nodes: the job's hosts (as for launch) less this one.
  auto others = core::job_other_hosts(ctx.env, ctx.probe, hostfile_, !no_hsn_);
  if (!others) {
    return ctx.term.fail(others.error());
  }
  const core::HostList targets = std::move(*others);
  for (const auto& target : targets) {
    if (auto ok = core::check_remote_host(target); !ok) {
      return ctx.term.fail(ok.error());
    }
  }
  const auto tree = core::relay_tree(targets, fanout_);
  const int total_nodes = static_cast<int>(targets.size()) + 1;
  auto size = ctx.transfer.measure(plan->source, plan->excludes);
  if (!size) {
    return ctx.term.fail(size.error());
  }
  const std::string host = ctx.env.hostname.empty() ? "localhost" : ctx.env.hostname;
  nlohmann::json summary = {
      {"source", plan->source},
      {"source_origin", plan->source_origin},
      {"kind", core::to_string(plan->kind)},
      {"destination", plan->destination},
      {"method", core::to_string(plan->method)},
      {"env", core::to_string(plan->env_kind)},
      {"bytes", size->bytes},
      {"files", size->files},
      {"nodes",
       [&] {
         auto nodes = nlohmann::json::array({host});
         for (const auto& t : targets) {
           nodes.push_back(t);
         }
         return nodes;
       }()},
      {"relay_tree", core::encode_tree(tree)},
      {"strategy", strategy_},
      {"dry_run", dry_run_},
  };
  auto& out = ctx.term.out();
  if (!json_) {
    out << "Source: " << plan->source << " (" << core::human_bytes(size->bytes) << ", " << size->files
        << " files)\nTarget: " << plan->destination << "/ on " << total_nodes << (total_nodes == 1 ? " node" : " nodes")
        << "\n  local:  " << host << " (" << core::to_string(plan->method) << ")\n";
    if (!targets.empty()) {
      out << "  remote: " << targets.size() << " node(s) through a relay tree, " << fanout_
          << " per relay: " << core::encode_tree(tree) << "\n";
    }
  }
  // Incremental: the copy this node made last time, when it still is what its manifest says;
  // other nodes then get only what changed (tree strategy).
  std::optional<core::HeldManifest> base;
  std::string full_reason = full_ ? "--full" : targets.empty() ? "" : strategy_ == "greedy" ? "--strategy greedy" : "";
  if (!targets.empty() && full_reason.empty()) {
    if (auto held = ctx.transfer.held_manifest(plan->destination)) {
      base = std::move(*held);
    } else {
      full_reason = held.error().message;
    }
  }
  nlohmann::json incremental = {{"mode", base ? "delta" : "full"}, {"reason", full_reason}};
  if (dry_run_ && base && plan->kind == core::SourceKind::directory) {
    if (auto est = ctx.transfer.estimate_changes(plan->source, plan->excludes, base->manifest)) {
      incremental["estimate"] = {{"files", est->files}, {"bytes", est->bytes}, {"removed", est->removed}};
      if (!json_) {
        out << "  changed since the last yeet: " << est->files << " file(s), " << core::human_bytes(est->bytes) << ", "
            << est->removed << " removed: only these (as deltas where smaller) go to the other nodes\n";
      }
    }
  } else if (!json_ && !targets.empty()) {
    out << "  other nodes get " << (base ? "what changed since the last yeet" : "everything (" + full_reason + ")")
        << "\n";
  }
  summary["incremental"] = incremental;
  if (dry_run_) {
    if (json_) {
      summary["ok"] = true;
      ctx.term.print_json(summary.dump());
    } else {
      out << "[dry-run] nothing transferred\n";
    }
    return 0;
  }

  // 2. Build the new tree beside the destination; any failure removes it and leaves the old one.
  const auto total_start = Clock::now();
  auto staging = ctx.transfer.make_staging(plan->destination);
  show_leftovers(ctx);  // earlier runs' work that could not be removed
  if (!staging) {
    return ctx.term.fail(staging.error());
  }
  std::string pack_file;
  auto cleanup = [&](const Error& e) {
    ctx.transfer.discard(*staging);
    if (!pack_file.empty()) {
      ctx.transfer.discard(pack_file);
    }
    show_leftovers(ctx);
    ctx.term.err() << "    x " << host << " (local, " << core::to_string(plan->method) << ") failed\n";
    if (const int sig = ctx.transfer.interrupted()) {
      ctx.term.error("interrupted: " + plan->destination + " is unchanged");
      return 128 + sig;
    }
    ctx.term.error(e.message + " (" + plan->destination + " is unchanged)");
    return static_cast<int>(ExitCode::failure);
  };
  nlohmann::ordered_json steps = nlohmann::ordered_json::object();
  Expected<core::TreeStats> copied = core::TreeStats{};
  {
    const auto t = Clock::now();
    const bool tarball = plan->method == core::CopyMethod::tarball;
    ProgressBar bar(ctx.term, tarball ? "extracting" : "copying", size->bytes);
    auto tick = [&bar](unsigned long long done) { bar.update(done); };
    switch (plan->method) {
      case core::CopyMethod::sync:
        copied = ctx.transfer.sync_tree(plan->source, plan->destination, *staging, plan->excludes, tick);
        break;
      case core::CopyMethod::copy:
        copied = ctx.transfer.copy_tree(plan->source, *staging, plan->excludes, tick);
        break;
      case core::CopyMethod::compress: {
        pack_file = *staging + ".pack.tar.zst";  // a name the next run and the watcher know
        auto packed = ctx.transfer.pack(plan->source, plan->name, pack_file, core::ArchiveFormat::zst, plan->excludes,
                                        false, tick);
        if (!packed) {
          return cleanup(packed.error());
        }
        steps["pack_s"] = seconds_since(t);
        bar.finish();
        auto packed_size = ctx.transfer.measure(pack_file, {});
        ProgressBar extract_bar(ctx.term, "extracting", packed_size ? packed_size->bytes : 0);
        const auto te = Clock::now();
        copied = ctx.transfer.extract(pack_file, *staging, 0, true,
                                      [&extract_bar](unsigned long long done) { extract_bar.update(done); });
        steps["extract_s"] = seconds_since(te);
        ctx.transfer.discard(pack_file);
        pack_file.clear();
        break;
      }
      case core::CopyMethod::tarball:
        copied = ctx.transfer.extract(plan->source, *staging, max_bytes_, false, tick);
        if (copied && copied->checks && copied->checks->unchecked()) {
          ctx.term.warn(plan->source + " carries no checksum (" + copied->checks->compression +
                        ", no .sha256 beside it): damage to it cannot be detected; `ezpz tar-env` writes both");
        }
        break;
    }
    if (!copied) {
      return cleanup(copied.error());
    }
    if (copied->skipped > 0) {
      ctx.term.warn(std::to_string(copied->skipped) + " FIFO(s), socket(s) or device(s) in " + plan->source +
                    " not copied (the first: " + copied->first_skipped + ")");
    }
    if (plan->method != core::CopyMethod::compress) {
      steps[tarball ? "extract_s" : "copy_s"] = seconds_since(t);
    }
  }

  // 3. Patch a moved env once, here, for its final path.
  core::EnvKind env_kind = plan->env_kind;
  if (plan->kind != core::SourceKind::directory) {
    auto extracted = ctx.transfer.inspect(*staging);
    env_kind = extracted.has_conda_meta ? core::EnvKind::conda
               : extracted.has_activate ? core::EnvKind::venv
                                        : core::EnvKind::none;
  }
  const auto tp = Clock::now();
  auto report = ctx.transfer.patch_env(*staging, env_kind, old_prefixes(ctx, *staging, *plan, facts.real_path),
                                       plan->destination);
  if (!report) {
    return cleanup(report.error());
  }
  steps["patch_s"] = seconds_since(tp);
  if (ctx.transfer.interrupted()) {
    return cleanup(failure("interrupted"));
  }
  // The manifest of the new copy (for the next yeet), and what changed since the last one.
  std::string bundle;
  core::BundleStats bundle_stats;
  if (!targets.empty()) {
    const auto tm = Clock::now();
    auto now =
        ctx.transfer.write_manifest(*staging, base ? &base->manifest : nullptr,
                                    plan->kind == core::SourceKind::directory ? plan->source : "", plan->excludes);
    if (!now) {
      return cleanup(now.error());
    }
    incremental["manifest_digest"] = now->digest;
    if (base) {
      bundle = *staging + ".delta";  // a name the next run and the watcher know
      if (auto made = ctx.transfer.make_bundle(plan->destination, *base, *staging, *now, bundle)) {
        bundle_stats = *made;
      } else {
        ctx.term.warn("cannot build the delta (" + made.error().message + "): sending everything");
        ctx.transfer.discard(bundle);
        bundle.clear();
        incremental["mode"] = "full";
        incremental["reason"] = made.error().message;
      }
    }
    steps["manifest_s"] = seconds_since(tm);
  }
  if (auto committed = ctx.transfer.commit(*staging, plan->destination); !committed) {
    if (!bundle.empty()) {
      ctx.transfer.discard(bundle);
    }
    return cleanup(committed.error());
  }
  show_leftovers(ctx);  // the previous tree, when it could not be removed
  ctx.term.set_unchanged({});
  // 4. Every other node: stream the patched copy through the relay tree.
  std::vector<core::NodeResult> remote;
  core::StreamStats stream;
  if (!targets.empty()) {
    const auto tb = Clock::now();
    core::BroadcastSpec spec;
    spec.destination = plan->destination;
    spec.self_exe = ctx.env.self_exe;
    spec.ssh_command = split_command(ssh_command_);
    spec.accept_new_host_keys = accept_new_host_keys_;
    spec.stream_level = stream_level_;
    spec.reattach = !no_reattach_;
    spec.stall_timeout_s = stall_timeout_s_;
    spec.this_host = host;
    spec.user = ctx.env.get("USER").value_or("");
    std::tie(spec.exe_digest, spec.exe_size) = ctx.transfer.self_digest();
    if (strategy_ == "greedy") {
      remote = ctx.transfer.greedy_broadcast(targets, spec, 8);
    } else {
      ProgressBar bar(ctx.term, "streaming", 0);
      // Live view: on a terminal one redrawn line (bytes, nodes done, aggregate rate, who is
      // slowest); else a line a node.
      std::size_t done_nodes = 0;
      std::size_t failed_nodes = 0;
      std::vector<std::string> waiting(targets.begin(), targets.end());
      unsigned long long streamed = 0;
      auto draw = [&] {
        const double secs = std::max(seconds_since(tb), 1e-3);
        const auto receiving = targets.size() - failed_nodes;
        bar.update(streamed, ", " + std::to_string(done_nodes) + "/" + std::to_string(targets.size()) +
                                 " nodes done, aggregate " +
                                 core::human_bytes(static_cast<unsigned long long>(
                                     static_cast<double>(streamed) * static_cast<double>(receiving) / secs)) +
                                 "/s" + (waiting.empty() ? std::string() : ", slowest: " + waiting.front()));
      };
      auto on_result = [&](const core::NodeResult& r) {
        ++done_nodes;
        failed_nodes += r.ok ? 0 : 1;
        waiting.erase(std::remove(waiting.begin(), waiting.end(), r.host), waiting.end());
        if (ctx.term.interactive()) {
          draw();
        } else {
          ctx.term.err() << "  " << r.host << (r.ok ? " done in " + fixed1(r.seconds) + "s" : " failed: " + r.error)
                         << " (" << done_nodes << "/" << targets.size() << ")\n";
        }
      };
      remote = ctx.transfer.broadcast(
          bundle.empty() ? plan->destination : bundle, plan->name, tree, spec,
          [&](unsigned long long done) {
            streamed = done;
            draw();
          },
          on_result, &stream);
      if (ctx.term.interactive()) {
        ctx.term.err() << "\r\033[K" << std::flush;
      }
    }
    if (!bundle.empty()) {
      ctx.transfer.discard(bundle);
    }
    // Repair: nodes cut off by a failed relay, and nodes whose copy the delta could not update
    // (they missed the last yeet, or were edited by hand), get everything from a node that has
    // it (this one when no other node succeeded), so the head's uplink is not the only source.
    core::HostList orphans;
    std::string peer;
    nlohmann::json full_copies = nlohmann::json::array();
    for (const auto& r : remote) {
      if (!r.ok && r.error.rfind(core::kNeedsFullCopy, 0) == 0) {
        orphans.push_back(r.host);
        full_copies.push_back({{"host", r.host}, {"why", r.error.substr(core::kNeedsFullCopy.size())}});
      } else if (!r.ok && r.error.rfind("no report: its parent", 0) == 0) {
        orphans.push_back(r.host);
      } else if (r.ok && peer.empty()) {
        peer = r.host;
      }
    }
    if (!orphans.empty() && !ctx.transfer.interrupted() && strategy_ == "tree") {
      ctx.term.warn(std::to_string(orphans.size()) + " node(s) lost their relay or need a full copy: sending to " +
                    "them from " + (peer.empty() ? host : peer));
      const auto repair_tree = core::relay_tree(orphans, fanout_);
      auto again = peer.empty() ? ctx.transfer.broadcast(plan->destination, plan->name, repair_tree, spec, {})
                                : ctx.transfer.send_from_peer(peer, repair_tree, spec);
      for (const auto& a : again) {
        for (auto& r : remote) {
          if (r.host == a.host) {
            r = a;
            r.repaired_from = peer.empty() ? host : peer;
          }
        }
      }
    }
    incremental["full_copies"] = full_copies;
    steps["broadcast_s"] = seconds_since(tb);
  }
  if (const int sig = ctx.transfer.interrupted()) {
    ctx.term.error("interrupted: relays stopped; nodes that had not finished kept their previous copy");
    return 128 + sig;
  }
  const double total = seconds_since(total_start);
  for (const auto& b : report->binary_prefix) {
    ctx.term.warn("binary file " + plan->destination + "/" + b + " still names " + report->old_prefix +
                  " (left untouched; rebuild it or keep the old path available)");
  }

  summary["env"] = core::to_string(env_kind);
  summary["steps"] = nlohmann::json::parse(steps.dump());
  summary["seconds"] = total;
  summary["copied_files"] = copied->copied_files;
  if (copied->checks) {
    summary["source_checks"] = {{"compression", copied->checks->compression},
                                {"layer_checked", copied->checks->layer_checked},
                                {"sha256", copied->checks->sha256}};
  }
  summary["deleted"] = copied->deleted;
  summary["patched"] = report->rewritten;
  summary["relinked"] = report->relinked;
  summary["binary_prefix"] = report->binary_prefix;
  int succeeded = 1;  // this node
  nlohmann::json remote_json = nlohmann::json::array();
  std::vector<std::string> failed;
  for (const auto& r : remote) {
    succeeded += r.ok ? 1 : 0;
    if (!r.ok) {
      failed.push_back(r.host);
    }
    remote_json.push_back({{"host", r.host},
                           {"ok", r.ok},
                           {"seconds", r.seconds},
                           {"bytes", r.bytes},
                           {"digest_ok", r.digest_ok},
                           {"repaired_from", r.repaired_from},
                           {"reattached_to", r.reattached_to},
                           {"error", r.error}});
  }
  const bool met = core::success(rule, succeeded, total_nodes);
  summary["remote"] = remote_json;
  if (!bundle.empty()) {
    incremental["files"] = bundle_stats.files;
    incremental["bytes"] = bundle_stats.bytes;
    incremental["deltas"] = bundle_stats.deltas;
    incremental["delta_bytes"] = bundle_stats.delta_bytes;
    incremental["removed"] = bundle_stats.removed;
  }
  summary["incremental"] = incremental;
  if (stream.bytes > 0) {
    summary["stream"] = {{"bytes", stream.bytes},
                         {"level_min", stream.level_min},
                         {"level_max", stream.level_max},
                         {"level_final", stream.level_final}};
  }
  summary["failed"] = failed;
  summary["succeeded"] = succeeded;
  summary["threshold_met"] = met;
  // ezpz's sentinel: removed, then written only when some nodes failed but the threshold held.
  const std::string sentinel = plan->destination + "/.ezpz-yeet-failed-nodes.txt";
  ctx.transfer.discard(sentinel);
  if (!failed.empty() && met) {
    std::string text;
    for (const auto& f : failed) {
      text += f + "\n";
    }
    if (auto w = ctx.probe.write_file(sentinel, text); !w) {
      ctx.term.warn(w.error().message);
    }
  }
  show_leftovers(ctx);
  const int rc = met ? 0 : static_cast<int>(ExitCode::failure);
  if (json_) {
    summary["ok"] = met;
    ctx.term.print_json(summary.dump());
    return rc;
  }
  print_yeet_report(out, YeetOutcome{host, *plan, env_kind, total, steps, *copied, *report, !bundle.empty(),
                                     bundle_stats, stream, remote, failed, succeeded, total_nodes, met, sentinel});
  return rc;
}

}  // namespace ezpz::cli
