#include "cli/tar_env.hpp"

#include <chrono>
#include <optional>

#include <CLI/App.hpp>
#include <CLI/Validators.hpp>
#include <nlohmann/json.hpp>

#include "cli/terminal.hpp"
#include "cli/yeet_report.hpp"
#include "core/base/log.hpp"
#include "core/base/shell.hpp"
#include "core/base/strings.hpp"
#include "core/yeet/plan.hpp"

namespace ezpz::cli {

void TarEnvCommand::add_cli(CLI::App& app) {
  app.add_option("env", env_, "The env directory (default: $VIRTUAL_ENV, else $CONDA_PREFIX)")->type_name("FILE");
  app.add_option("-o,--output", output_, "Archive to write (default: <env>.tar.zst beside the env)")->type_name("FILE");
  app.add_option("--format", format_, "zst (multithreaded, default) or gz (for older tools)")
      ->check(CLI::IsMember({"zst", "gz"}));
  app.add_flag("--rebuild", rebuild_, "Pack again even when the archive is newer than the env");
  app.add_flag("--include-pycache", include_pycache_,
               "Pack __pycache__ directories too (left out by default, as yeet does)");
  app.add_flag("--json", json_, "Print a JSON summary on stdout");
  app.footer(
      "The archive holds <name>/... so that ezpz yeet ARCHIVE (and tar -x) recreate the env's directory.\n"
      "An existing archive newer than every file in the env is reused.\n\n"
      "Examples:\n"
      "  ezpz tar-env                      # the active env -> <env>.tar.zst\n"
      "  ezpz tar-env ~/venvs/torch -o /lus/proj/torch.tar.zst\n"
      "  ezpz yeet /lus/proj/torch.tar.zst # later, in the job");
}

namespace {
/// Where the archive is packed: a directory of ours that no one could have named in advance
/// (mkdtemp, 0700), beside OUT and named as its work path, so a SIGKILLed run leaves nothing
/// half-written there (the watcher removes it).
Expected<std::string> private_work_dir(Context& ctx, const std::string& out) {
  const std::string work = core::work_path(out, ctx.env.pid);
  ctx.staging().watch(out, work);
  return ctx.staging().make_private_dir(work);
}
}  // namespace

Expected<TarEnvPlan> TarEnvCommand::plan(Context& ctx) const {
  core::YeetRequest request;
  if (!env_.empty()) {
    request.source = env_;
  }
  EZPZ_TRY_ASSIGN(auto source, core::yeet_source(request, ctx.env, "ezpz tar-env"));
  TarEnvPlan p;
  const auto pwd = ctx.env.get("PWD").value_or("/");
  p.env = core::normalize_path(source.first.front() == '/' ? source.first : pwd + "/" + source.first);
  const auto facts = ctx.trees().inspect(p.env);
  if (!facts.is_directory) {
    return usage_error(p.env + (facts.exists ? " is not a directory" : " does not exist") +
                       ": pass the env's directory (or activate it)");
  }
  p.name = p.env.substr(p.env.rfind('/') + 1);
  p.format = format_ == "gz" ? core::ArchiveFormat::gz : core::ArchiveFormat::zst;
  const std::string out =
      output_.empty() ? p.env + (p.format == core::ArchiveFormat::gz ? ".tar.gz" : ".tar.zst") : output_;
  p.out = core::normalize_path(out.front() == '/' ? out : pwd + "/" + out);
  ctx.term.set_unchanged({p.out});  // a failure leaves OUT as it was (no half-written archive)
  if (p.out == p.env || p.out.rfind(p.env + "/", 0) == 0) {
    return usage_error("output " + p.out + " is inside the env " + p.env + ": write it elsewhere with -o");
  }
  p.excludes = core::default_excludes(include_pycache_);
  EZPZ_TRY_ASSIGN(p.stats, ctx.trees().measure(p.env, p.excludes));
  return p;
}

namespace {

nlohmann::json summary_json(const TarEnvPlan& p, const std::string& format) {
  return {{"ok", true},
          {"env", p.env},
          {"archive", p.out},
          {"format", format},
          {"bytes", p.stats.bytes},
          {"files", p.stats.files},
          {"left_out", left_out_json(p.stats, p.excludes)}};
}

/// OUT when it is newer than every file of the env (nothing to pack again), with its size.
std::optional<unsigned long long> reusable(Context& ctx, const TarEnvPlan& p) {
  const auto existing = ctx.trees().inspect(p.out);
  if (!existing.exists || existing.is_directory) {
    return std::nullopt;
  }
  auto archive = ctx.trees().measure(p.out, {});
  if (!archive || archive->newest_mtime < p.stats.newest_mtime) {
    return std::nullopt;
  }
  return archive->bytes;
}

/// The failure of a step after the pack began: what the staging has to say, then the error; the
/// exit code a signal gives (128+N) or 1.
int fail_packing(Context& ctx, const Error& e) {
  for (const auto& w : ctx.staging().take_warnings()) {
    ctx.term.warn(w);
  }
  ctx.term.error(e.message);
  const int sig = ctx.staging().interrupted();
  return sig != 0 ? 128 + sig : static_cast<int>(ExitCode::failure);
}

}  // namespace

Expected<std::string> TarEnvCommand::pack(Context& ctx, const TarEnvPlan& p) const {
  auto dir = private_work_dir(ctx, p.out);
  if (!dir) {  // (it is made beside OUT: another OUT is the fix)
    return failure(dir.error().message + ": write the archive where you can with -o, e.g. -o " +
                   ctx.env.get("HOME").value_or("~") + "/" + p.out.substr(p.out.rfind('/') + 1));
  }
  const std::string tmp = *dir + "/" + p.name + ".tar";
  ProgressBar bar(ctx.term, "packing", p.stats.bytes);
  auto packed = ctx.archives().pack(p.env, p.name, tmp, p.format, p.excludes, core::PackDigest::sha256,
                                    [&bar](unsigned long long done) { bar.update(done); });
  bar.finish();
  if (!packed) {
    ctx.staging().discard(*dir);
    return packed.error();
  }
  // An old OUT.sha256 must never sit beside the new archive (yeet would call it damaged).
  ctx.staging().discard(p.out + ".sha256");
  auto moved = ctx.staging().rename_file(tmp, p.out);
  ctx.staging().discard(*dir);
  if (!moved) {
    return moved.error();
  }
  return packed->sha256;
}

int TarEnvCommand::run(Context& ctx) {
  // 1. Plan: the env, the archive's path and format, what is left out, the env's size.
  auto p = plan(ctx);
  if (!p) {
    return ctx.term.fail(p.error());
  }
  log::info("tar-env: " + p->env + " (" + core::human_bytes(p->stats.bytes) + ", " +
            core::count_of(p->stats.files, "file") + ") -> " + p->out + " (" + format_ + ")");
  auto summary = summary_json(*p, format_);
  // 2. An archive newer than every file of the env is reused (--rebuild packs again).
  if (auto bytes = rebuild_ ? std::nullopt : reusable(ctx, *p)) {
    log::info("tar-env: " + p->out + " is newer than every file of the env: reused");
    summary["reused"] = true;
    summary["archive_bytes"] = *bytes;
    if (json_) {
      ctx.term.print_json(summary.dump());
    } else {
      ctx.term.out() << "Reusing " << p->out << " (" << core::human_bytes(*bytes)
                     << "): it is newer than every file in " << p->env << " (--rebuild to pack again)\n";
    }
    return 0;
  }
  // 3. Pack into a private directory beside OUT, then rename it into place.
  const auto start = std::chrono::steady_clock::now();
  auto sha256 = pack(ctx, *p);
  if (!sha256) {
    return fail_packing(ctx, sha256.error());
  }
  ctx.term.set_unchanged({});  // OUT is the new archive now
  // 4. The archive's SHA-256 beside it: yeet verifies it while extracting (one read).
  if (auto summed = ctx.archives().write_checksum(p->out, *sha256); !summed) {
    ctx.term.error(summed.error().message + " (" + p->out + " is written, without its .sha256)");
    return static_cast<int>(ExitCode::failure);
  }
  // 5. Say what was written.
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto archive = ctx.trees().measure(p->out, {});
  summary["sha256"] = *sha256;
  summary["reused"] = false;
  summary["archive_bytes"] = archive ? archive->bytes : 0;
  summary["seconds"] = secs;
  if (json_) {
    ctx.term.print_json(summary.dump());
  } else {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1f", secs);
    ctx.term.out() << "Packed " << p->env << " (" << core::human_bytes(p->stats.bytes) << ", "
                   << core::count_of(p->stats.files, "file") << ") into " << p->out << " ("
                   << core::human_bytes(archive ? archive->bytes : 0) << ") in " << buf << "s\n"
                   << left_out(p->stats, p->excludes, "--include-pycache")
                   << "  Copy it to every node's /tmp with: ezpz yeet " << core::shell_quote(p->out) << "\n";
  }
  return 0;
}

}  // namespace ezpz::cli
