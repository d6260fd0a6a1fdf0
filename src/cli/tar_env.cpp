#include "cli/tar_env.hpp"

#include <chrono>

#include <CLI/App.hpp>
#include <CLI/Validators.hpp>
#include <nlohmann/json.hpp>

#include "cli/terminal.hpp"
#include "cli/yeet_report.hpp"
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

int TarEnvCommand::run(Context& ctx) {
  core::YeetRequest request;
  if (!env_.empty()) {
    request.source = env_;
  }
  auto source = core::yeet_source(request, ctx.env, "ezpz tar-env");
  if (!source) {
    ctx.term.error(source.error().message);
    return static_cast<int>(source.error().code);
  }
  std::string path =
      source->first.front() == '/' ? source->first : ctx.env.get("PWD").value_or("/") + "/" + source->first;
  path = core::normalize_path(path);
  const auto facts = ctx.trees().inspect(path);
  if (!facts.is_directory) {
    ctx.term.error(path + (facts.exists ? " is not a directory" : " does not exist") +
                   ": pass the env's directory (or activate it)");
    return static_cast<int>(ExitCode::usage);
  }
  const std::string name = path.substr(path.rfind('/') + 1);
  const auto format = format_ == "gz" ? core::ArchiveFormat::gz : core::ArchiveFormat::zst;
  std::string out = output_.empty() ? path + (format == core::ArchiveFormat::gz ? ".tar.gz" : ".tar.zst") : output_;
  if (out.front() != '/') {
    out = ctx.env.get("PWD").value_or("/") + "/" + out;
  }
  out = core::normalize_path(out);
  ctx.term.set_unchanged({out});  // a failure leaves OUT as it was (no half-written archive)
  if (out == path || out.rfind(path + "/", 0) == 0) {
    ctx.term.error("output " + out + " is inside the env " + path + ": write it elsewhere with -o");
    return static_cast<int>(ExitCode::usage);
  }

  const auto excludes = core::default_excludes(include_pycache_);
  auto env_stats = ctx.trees().measure(path, excludes);
  if (!env_stats) {
    ctx.term.error(env_stats.error().message);
    return static_cast<int>(ExitCode::failure);
  }
  nlohmann::json summary = {{"ok", true},
                            {"env", path},
                            {"archive", out},
                            {"format", format_},
                            {"bytes", env_stats->bytes},
                            {"files", env_stats->files},
                            {"left_out", left_out_json(*env_stats, excludes)}};
  const auto existing = ctx.trees().inspect(out);
  if (!rebuild_ && existing.exists && !existing.is_directory) {
    auto archive = ctx.trees().measure(out, {});
    if (archive && archive->newest_mtime >= env_stats->newest_mtime) {
      summary["reused"] = true;
      summary["archive_bytes"] = archive->bytes;
      if (json_) {
        ctx.term.print_json(summary.dump());
      } else {
        ctx.term.out() << "Reusing " << out << " (" << core::human_bytes(archive->bytes)
                       << "): it is newer than every file in " << path << " (--rebuild to pack again)\n";
      }
      return 0;
    }
  }

  const auto start = std::chrono::steady_clock::now();
  auto dir = private_work_dir(ctx, out);
  if (!dir) {  // (it is made beside OUT: another OUT is the fix)
    ctx.term.error(dir.error().message + ": write the archive where you can with -o, e.g. -o " +
                   ctx.env.get("HOME").value_or("~") + "/" + out.substr(out.rfind('/') + 1));
    return static_cast<int>(ExitCode::failure);
  }
  const std::string tmp = *dir + "/" + name + ".tar";
  ProgressBar bar(ctx.term, "packing", env_stats->bytes);
  auto packed = ctx.archives().pack(path, name, tmp, format, excludes, core::PackDigest::sha256,
                                    [&bar](unsigned long long done) { bar.update(done); });
  bar.finish();
  if (!packed) {
    ctx.staging().discard(*dir);
    for (const auto& w : ctx.staging().take_warnings()) {
      ctx.term.warn(w);
    }
    ctx.term.error(packed.error().message);
    const int sig = ctx.staging().interrupted();
    return sig != 0 ? 128 + sig : static_cast<int>(ExitCode::failure);
  }
  // An old OUT.sha256 must never sit beside the new archive (yeet would call it damaged).
  ctx.staging().discard(out + ".sha256");
  auto moved = ctx.staging().rename_file(tmp, out);
  ctx.staging().discard(*dir);
  if (!moved) {
    for (const auto& w : ctx.staging().take_warnings()) {
      ctx.term.warn(w);
    }
    ctx.term.error(moved.error().message);
    return static_cast<int>(ExitCode::failure);
  }
  ctx.term.set_unchanged({});  // OUT is the new archive now
  // The archive's SHA-256 beside it: yeet verifies it while extracting (one read).
  if (auto summed = ctx.archives().write_checksum(out, packed->sha256); !summed) {
    ctx.term.error(summed.error().message + " (" + out + " is written, without its .sha256)");
    return static_cast<int>(ExitCode::failure);
  }
  summary["sha256"] = packed->sha256;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto archive = ctx.trees().measure(out, {});
  summary["reused"] = false;
  summary["archive_bytes"] = archive ? archive->bytes : 0;
  summary["seconds"] = secs;
  if (json_) {
    ctx.term.print_json(summary.dump());
  } else {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1f", secs);
    ctx.term.out() << "Packed " << path << " (" << core::human_bytes(env_stats->bytes) << ", "
                   << core::count_of(env_stats->files, "file") << ") into " << out << " ("
                   << core::human_bytes(archive ? archive->bytes : 0) << ") in " << buf << "s\n"
                   << left_out(*env_stats, excludes, "--include-pycache")
                   << "  Copy it to every node's /tmp with: ezpz yeet " << core::shell_quote(out) << "\n";
  }
  return 0;
}

}  // namespace ezpz::cli
