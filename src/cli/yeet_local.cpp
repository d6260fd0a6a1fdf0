// yeet's work on this node: copy, sync, extract or pack+extract into a work directory beside the
// destination, patch a moved env, write the manifest (and the delta for the other nodes), commit.
#include <algorithm>
#include <chrono>
#include <optional>

#include "cli/terminal.hpp"
#include "cli/version.hpp"
#include "cli/yeet_steps.hpp"
#include "core/base/strings.hpp"
#include "core/yeet/manifest.hpp"

namespace ezpz::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// Old prefixes a moved env may name: what bin/activate records, the source as given and resolved.
std::vector<std::string> old_prefixes(YeetRun& run, const std::string& root) {
  std::vector<std::string> out;
  auto add = [&](const std::string& p) {
    if (!p.empty() && p != run.plan().destination && std::find(out.begin(), out.end(), p) == out.end()) {
      out.push_back(p);
    }
  };
  if (auto recorded = run.ctx.trees().recorded_prefix(root)) {
    add(*recorded);
  }
  if (run.plan().kind == core::SourceKind::directory) {
    add(run.plan().source);
    add(run.source_real);
  }
  return out;
}

/// The work made so far, removed; the error said; the exit code (128+N when a signal stopped it).
class Undo {
 public:
  explicit Undo(YeetRun& run) : run_(run) {}
  std::string staging;
  std::string pack_dir;
  int operator()(const Error& e) {
    auto& ctx = run_.ctx;
    for (const auto* path : {&staging, &pack_dir, &run_.bundle}) {
      if (!path->empty()) {
        ctx.staging().discard(*path);
      }
    }
    show_leftovers(ctx);
    const auto& plan = run_.plan();
    ctx.term.err() << "    x " << run_.report.host << " (local, " << core::to_string(plan.method) << ") failed\n";
    if (const int sig = ctx.staging().interrupted()) {
      ctx.term.error("interrupted: " + plan.destination + " is unchanged");
      return 128 + sig;
    }
    ctx.term.error(e.message + " (" + plan.destination + " is unchanged)");
    return static_cast<int>(ExitCode::failure);
  }

 private:
  YeetRun& run_;
};

/// --compress: pack the source once, then extract the pack (least metadata I/O on the source).
/// The pack lives in a directory of ours no one could have named in advance (mkdtemp, 0700; its
/// name is the work path's, so the watcher and the next run know it), and its digest is checked
/// as it is extracted: what is extracted is what was packed (docs/security.md).
Expected<core::TreeStats> pack_then_extract(YeetRun& run, Undo& undo, ProgressBar& bar) {
  auto& ctx = run.ctx;
  const auto& plan = run.plan();
  const auto t = Clock::now();
  EZPZ_TRY_ASSIGN(undo.pack_dir, ctx.staging().make_private_dir(undo.staging + ".pack"));
  const std::string pack_file = undo.pack_dir + "/pack.tar.zst";
  EZPZ_TRY_ASSIGN(auto packed,
                  ctx.archives().pack(plan.source, plan.name, pack_file, core::ArchiveFormat::zst, plan.excludes,
                                      core::PackDigest::sha256, [&bar](unsigned long long done) { bar.update(done); }));
  EZPZ_TRY(ctx.archives().write_checksum(pack_file, packed.sha256));
  run.report.steps.emplace_back("pack_s", seconds_since(t));
  bar.finish();
  auto packed_size = ctx.trees().measure(pack_file, {});
  ProgressBar extract_bar(ctx.term, "extracting", packed_size ? packed_size->bytes : 0);
  const auto te = Clock::now();
  auto copied = ctx.archives().extract(pack_file, undo.staging, 0, core::ArchiveOrigin::own,
                                       [&extract_bar](unsigned long long done) { extract_bar.update(done); });
  run.report.steps.emplace_back("extract_s", seconds_since(te));
  if (copied && !(copied->checks && copied->checks->sha256)) {
    copied = failure("the pack of " + plan.source + " was not checked against its digest as it was extracted");
  }
  ctx.staging().discard(undo.pack_dir);
  undo.pack_dir.clear();
  return copied;
}

/// The new tree in the work directory, by the plan's method.
Expected<core::TreeStats> build_tree(YeetRun& run, Undo& undo) {
  auto& ctx = run.ctx;
  const auto& plan = run.plan();
  const auto t = Clock::now();
  const bool tarball = plan.method == core::CopyMethod::tarball;
  ProgressBar bar(ctx.term, tarball ? "extracting" : "copying", run.report.size.bytes);
  auto tick = [&bar](unsigned long long done) { bar.update(done); };
  Expected<core::TreeStats> copied = core::TreeStats{};
  switch (plan.method) {
    case core::CopyMethod::sync:
      copied = ctx.trees().sync_tree(plan.source, plan.destination, undo.staging, plan.excludes, tick);
      break;
    case core::CopyMethod::copy:
      copied = ctx.trees().copy_tree(plan.source, undo.staging, plan.excludes, tick);
      break;
    case core::CopyMethod::compress:
      return pack_then_extract(run, undo, bar);
    case core::CopyMethod::tarball:
      copied = ctx.archives().extract(plan.source, undo.staging, run.max_bytes, core::ArchiveOrigin::foreign, tick);
      if (copied && copied->checks && copied->checks->unchecked()) {
        ctx.term.warn(plan.source + " carries no checksum (" + copied->checks->compression +
                      ", no .sha256 beside it): damage to it cannot be detected; `ezpz tar-env` writes both");
      }
      break;
  }
  if (copied) {
    run.report.steps.emplace_back(tarball ? "extract_s" : "copy_s", seconds_since(t));
  }
  return copied;
}

/// Patch a moved env once, here, for its final path (a tarball's kind is known once extracted).
Expected<core::PatchReport> patch(YeetRun& run, const std::string& staging) {
  const auto& plan = run.plan();
  run.report.env_kind = plan.env_kind;
  if (plan.kind != core::SourceKind::directory) {
    auto extracted = run.ctx.trees().inspect(staging);
    run.report.env_kind = extracted.has_conda_meta ? core::EnvKind::conda
                          : extracted.has_activate ? core::EnvKind::venv
                                                   : core::EnvKind::none;
  }
  const auto t = Clock::now();
  auto report = run.ctx.trees().patch_env(staging, run.report.env_kind, old_prefixes(run, staging), plan.destination);
  run.report.steps.emplace_back("patch_s", seconds_since(t));
  return report;
}

/// The manifest of the new copy (for the next yeet): the last one updated where the source
/// changed (`changes`, and what the patch rewrote), or made anew; then the delta since the last one.
Expected<void> manifest_and_delta(YeetRun& run, const std::string& staging, const core::ChangeEstimate* changes) {
  auto& ctx = run.ctx;
  const auto& plan = run.plan();
  const auto t = Clock::now();
  const std::string source = plan.kind == core::SourceKind::directory ? plan.source : "";
  auto manifest = [&]() -> Expected<core::HeldManifest> {
    if (changes == nullptr) {
      return ctx.manifests().write_manifest(staging, run.base ? &run.base->manifest : nullptr, source, plan.excludes);
    }
    auto touched = changes->changed;
    const auto& patched = run.report.patch;
    touched.insert(touched.end(), patched.rewritten.begin(), patched.rewritten.end());
    touched.insert(touched.end(), patched.relinked.begin(), patched.relinked.end());
    return ctx.manifests().update_manifest(staging, *run.base, source, touched, changes->gone);
  };
  EZPZ_TRY_ASSIGN(auto now, manifest());
  run.report.manifest_digest = now.digest;
  if (run.base) {
    run.bundle = staging + ".delta";  // a name the next run and the watcher know
    if (auto made = ctx.manifests().make_bundle(plan.destination, *run.base, staging, now, run.bundle)) {
      run.report.bundle = *made;
    } else {
      ctx.term.warn("cannot build the delta (" + made.error().message + "): sending everything");
      ctx.staging().discard(run.bundle);
      run.bundle.clear();
      run.report.delta = false;
      run.report.full_reason = made.error().message;
    }
  }
  run.report.steps.emplace_back("manifest_s", seconds_since(t));
  return {};
}

/// How the source differs from what this node's copy was made of (that copy was checked against
/// its manifest: run.base), entry by entry, from one walk of the source. Syncs of a directory
/// whose copy left out the same names only; nullopt: build the tree whole.
std::optional<core::ChangeEstimate> changes_since_base(YeetRun& run) {
  const auto& plan = run.plan();
  if (!run.base || plan.method != core::CopyMethod::sync || plan.kind != core::SourceKind::directory ||
      run.base->manifest.ignore != plan.excludes) {
    return std::nullopt;
  }
  const auto t = Clock::now();
  auto est = run.ctx.manifests().estimate_changes(plan.source, plan.excludes, run.base->manifest);
  run.report.steps.emplace_back("check_s", seconds_since(t));
  if (!est) {
    return std::nullopt;
  }
  return std::move(*est);
}

/// The new tree from this node's copy (hard links) and the source's `changes` alone.
Expected<core::TreeStats> sync_changes(YeetRun& run, const core::ChangeEstimate& changes, const std::string& staging) {
  auto& ctx = run.ctx;
  const auto& plan = run.plan();
  const auto t = Clock::now();
  ProgressBar bar(ctx.term, "copying", changes.bytes);
  auto copied = ctx.manifests().sync_changes(plan.source, plan.destination, *run.base, changes, staging,
                                             [&bar](unsigned long long done) { bar.update(done); });
  if (copied) {
    run.report.steps.emplace_back("copy_s", seconds_since(t));
  }
  return copied;
}

/// Nothing changed: the copy here stays as it is; the other nodes get a bundle that changes
/// nothing (each checks its own copy against the manifest and keeps it, or gets the whole tree).
Expected<void> keep_as_is(YeetRun& run, const std::string& staging) {
  auto& ctx = run.ctx;
  ctx.staging().discard(staging);  // still empty
  run.report.env_kind = run.plan().env_kind;
  run.report.manifest_digest = run.base->digest;
  const auto& dst = run.plan().destination;
  run.bundle = staging + ".delta";  // a name the next run and the watcher know
  auto made = ctx.manifests().make_bundle(dst, *run.base, dst, *run.base, run.bundle);
  if (!made) {
    return made.error();
  }
  run.report.bundle = *made;
  return {};
}

}  // namespace

void show_leftovers(Context& ctx) {
  for (const auto& w : ctx.staging().take_warnings()) {
    ctx.term.warn(w);
  }
}

std::optional<int> install_here(YeetRun& run) {
  auto& ctx = run.ctx;
  const auto& plan = run.plan();
  run.started = Clock::now();
  // 1. A work directory beside the destination; earlier runs' leftovers are swept first. Every
  // relay installs through the same steps (core::NodeInstall).
  core::NodeInstall install(ctx.trees(), ctx.staging(), ctx.manifests(), run.target);
  auto staging = install.open();
  show_leftovers(ctx);
  if (!staging) {
    return ctx.term.fail(staging.error());
  }
  Undo undo(run);
  undo.staging = *staging;
  // 1b. Meanwhile the other nodes' relays start, to wait for the stream (stopped if this fails).
  start_nodes(run);
  // 1c. What changed since this node's last copy. Nothing: it stays; the other nodes check theirs.
  const auto changes = changes_since_base(run);
  if (changes && changes->files == 0 && changes->removed == 0) {
    if (auto kept = keep_as_is(run, *staging); !kept) {
      return undo(kept.error());
    }
    ctx.term.set_unchanged({});
    return std::nullopt;
  }
  // The other nodes' relays start their clones of their copies now, while this one builds the delta.
  if (changes) {
    ctx.broadcaster().announce_delta(run.base->digest);
  }
  // 2. The new tree in it: the last copy and what changed, or built whole.
  auto copied = changes ? sync_changes(run, *changes, *staging) : build_tree(run, undo);
  if (!copied) {
    return undo(copied.error());
  }
  run.report.copied = *copied;
  if (copied->skipped > 0) {
    ctx.term.warn(core::count_of(copied->skipped, "FIFO, socket or device", "FIFOs, sockets or devices") + " in " +
                  plan.source + " not copied (the first: " + copied->first_skipped + ")");
  }
  // 3. A moved env patched for its new home.
  auto patched = patch(run, *staging);
  if (!patched) {
    return undo(patched.error());
  }
  run.report.patch = *patched;
  if (ctx.staging().interrupted()) {
    return undo(failure("interrupted"));
  }
  // 4. yeet's mark (the next yeet may replace this copy); with other nodes, the manifest and
  // the delta they get.
  const auto epoch =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  if (auto marked = ctx.manifests().write_marker(
          *staging, core::yeet_marker_text(plan.source, epoch.count(), std::string(version_number())));
      !marked) {
    return undo(marked.error());
  }
  if (!run.report.nodes.targets.empty()) {
    if (auto made = manifest_and_delta(run, *staging, changes ? &*changes : nullptr); !made) {
      return undo(made.error());
    }
  }
  // 5. In place of the destination, atomically; from here a failure leaves the new copy. With
  // other nodes, the previous copy is removed while they get theirs (the report says what was left).
  const bool nodes = !run.report.nodes.targets.empty();
  if (nodes) {
    ctx.staging().remove_old_trees_later();
  }
  // The copy it replaces is the next update's spare when this tree was made from it.
  const auto previous =
      changes ? core::previous_after(run.base->manifest, changes->gone, changes->changed) : core::Previous::replace;
  if (auto placed = install.place(*staging, core::Received::tree, previous); !placed) {
    return undo(placed.error());
  }
  if (!nodes) {
    show_leftovers(ctx);  // the previous tree, when it could not be removed
  }
  ctx.term.set_unchanged({});
  return std::nullopt;
}

}  // namespace ezpz::cli
