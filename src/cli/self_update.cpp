#include "cli/self_update.hpp"

#include <CLI/App.hpp>
#include <nlohmann/json.hpp>

#include "cli/terminal.hpp"
#include "cli/version.hpp"
#include "core/base/log.hpp"
#include "core/base/strings.hpp"
#include "core/update/release.hpp"
#include "core/yeet/transfer.hpp"

namespace ezpz::cli {
namespace {

/// --check's exit status when a newer release exists (dnf check-update's convention).
constexpr int kUpdateAvailable = 100;

std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// Where releases come from and what fetches them.
struct Source {
  std::string base;                ///< without a trailing slash
  std::string tool;                ///< curl's or wget's path
  std::optional<std::string> key;  ///< the release key SHA256SUMS must be signed with, when there is one
};

Expected<Source> release_source(Context& ctx, const std::optional<std::string>& flag) {
  std::string base =
      flag.value_or(ctx.env.get("EZPZ_INSTALL_BASE_URL").value_or(std::string(core::kDefaultReleaseUrl)));
  while (!base.empty() && base.back() == '/') {
    base.pop_back();
  }
  EZPZ_TRY(core::check_release_url(base));
  EZPZ_TRY_ASSIGN(auto key, core::release_key(embedded_release_key(), ctx.env.get("EZPZ_RELEASE_PUBLIC_KEY")));
  auto tool = ctx.probe().find_program("curl");
  if (!tool) {
    tool = ctx.probe().find_program("wget");
  }
  if (!tool) {
    return failure("neither curl nor wget is on PATH: install one (ezpz runs them rather than carry an HTTP client)");
  }
  return Source{base, *tool, key};
}

/// `url` downloaded to `file`; an error names the URL and what the tool said.
Expected<void> fetch(Context& ctx, const Source& src, const std::string& url, const std::string& file) {
  log::info("self-update: " + url + " with " + src.tool);
  EZPZ_TRY_ASSIGN(auto ran, ctx.probe().run_program(core::fetch_argv(src.tool, url, file), {}, {}, 600));
  if (ran.exit_code != 0) {
    auto why = std::string(core::trim(ran.output));
    why = why.substr(why.rfind('\n') == std::string::npos ? 0 : why.rfind('\n') + 1);
    if (why.rfind("curl: (", 0) == 0) {
      why = why.substr(why.find(") ") + 2);
    }
    return failure("cannot download " + url + ": " +
                   (why.empty() ? src.tool + " exited " + std::to_string(ran.exit_code) : why) + " (nothing replaced)");
  }
  return {};
}

/// SHA256SUMS's signature, where there is a release key: fetched beside it and checked.
Expected<void> check_signed(Context& ctx, const Source& src, const std::string& sums) {
  if (!src.key) {
    return {};
  }
  const auto url = src.base + "/" + std::string(core::kSignatureName);
  const auto key = "the release key " + src.key->substr(0, 16) + "...";
  if (auto got = fetch(ctx, src, url, sums + ".sig"); !got) {
    return failure(got.error().message + "; this ezpz takes only releases signed with " + key +
                   " (built in, or EZPZ_RELEASE_PUBLIC_KEY)");
  }
  switch (ctx.probe().check_signature(sums, sums + ".sig", *src.key)) {
    case core::Signature::valid:
      return {};
    case core::Signature::unreadable:
      return failure("cannot read " + sums + " or its signature (nothing replaced)");
    case core::Signature::invalid:
      break;
  }
  return failure(url + " is not a signature of SHA256SUMS by " + key +
                 ": tampered with, or another publisher's release; nothing replaced");
}

/// The release this machine gets from SHA256SUMS (fetched into `work`, its signature checked).
Expected<core::ReleaseChoice> pick_release(Context& ctx, const Source& src, const std::string& work,
                                           const std::optional<std::string>& version) {
  const auto sums_url = src.base + "/SHA256SUMS";
  const auto sums = work + "/SHA256SUMS";
  EZPZ_TRY(fetch(ctx, src, sums_url, sums));
  EZPZ_TRY(check_signed(ctx, src, sums));
  EZPZ_TRY_ASSIGN(auto text, ctx.probe().read_file(sums));
  return core::choose_release(core::parse_sha256sums(text), std::string(build_arch()), version, sums_url);
}

/// The running binary, resolved (a symlink to it is left alone), and refused where it is not the
/// user's to replace: a site install is the site's to update.
Expected<std::string> own_binary(Context& ctx, const std::string& base) {
  const auto exe = ctx.probe().real_path(ctx.env.self_exe);
  for (const auto& path : {exe, parent_of(exe)}) {
    const auto stamp = ctx.probe().file_stamp(path);
    if (!stamp || stamp->owner != ctx.env.uid) {
      return failure(path + " is not yours (a site install): ask the site to update it, or install your own copy: " +
                     "curl -fsSL " + base + "/install.sh | sh");
    }
  }
  return exe;
}

/// A private work directory: for --check anywhere (TMPDIR), for an update beside the binary (the
/// new one is renamed over it, so on its filesystem). Removed when the run ends.
class Work {
 public:
  Work(Context& ctx, std::string dir) : ctx_(ctx), dir_(std::move(dir)) {}
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;
  ~Work() { ctx_.staging().discard(dir_); }
  [[nodiscard]] const std::string& dir() const { return dir_; }

 private:
  Context& ctx_;
  std::string dir_;
};

struct Ask {
  std::optional<std::string> version;
  bool force = false;
  bool json = false;
};

int check_release(Context& ctx, const Source& src, const Ask& ask) {
  auto dir = ctx.probe().make_private_dir(ctx.env.get("TMPDIR").value_or("/tmp") + "/ezpz-update");
  if (!dir) {
    return ctx.term.fail(dir.error());
  }
  Work work(ctx, *dir);
  auto newest = pick_release(ctx, src, work.dir(), ask.version);
  if (!newest) {
    return ctx.term.fail(newest.error());
  }
  const bool newer = core::compare_versions(newest->version, version_number()) > 0;
  if (ask.json) {
    ctx.term.print_json(nlohmann::json{
        {"installed", version_number()},
        {"newest", newest->version},
        {"update_available", newer},
        {"signature", src.key ? "checked" : "not checked"},
        {"release_key", src.key ? nlohmann::json(*src.key) : nlohmann::json(nullptr)},
        {"base_url",
         src.base}}.dump());
  } else {
    ctx.term.out() << "installed " << version_number() << ", newest " << newest->version << " (" << src.base
                   << (src.key ? ", signature checked" : "") << ")"
                   << (newer ? ": update with `ezpz self-update`" : ": up to date") << '\n';
  }
  return newer ? kUpdateAvailable : 0;
}

int update_binary(Context& ctx, const Source& src, const Ask& ask) {
  // 1. Whose binary: refused where it is not the user's (a site install).
  auto exe = own_binary(ctx, src.base);
  if (!exe) {
    return ctx.term.fail(exe.error());
  }
  auto dir = ctx.probe().make_private_dir(parent_of(*exe) + "/.ezpz-update");
  if (!dir) {
    return ctx.term.fail(failure(dir.error().message + " (the new ezpz is made beside the old one)"));
  }
  Work work(ctx, *dir);
  // 2. Which release; the version installed already is left alone unless --version or --force.
  auto release = pick_release(ctx, src, work.dir(), ask.version);
  if (!release) {
    return ctx.term.fail(release.error());
  }
  if (release->version == version_number() && !ask.force) {
    ctx.term.out() << "ezpz " << version_number() << " is the newest (" << src.base << "): nothing to do\n";
    return 0;
  }
  // 3. Downloaded and checked before anything is replaced.
  const auto tarball = work.dir() + "/" + release->name;
  if (auto got = fetch(ctx, src, src.base + "/" + release->name, tarball); !got) {
    return ctx.term.fail(got.error());
  }
  if (const auto sum = ctx.probe().file_digest(tarball); sum != release->sha256) {
    return ctx.term.fail(failure("SHA-256 of " + release->name + " is " + (sum.empty() ? "unreadable" : sum) +
                                 ", expected " + release->sha256 + ": damaged or tampered with; nothing replaced"));
  }
  auto unpacked = ctx.probe().make_private_dir(work.dir() + "/x");  // its one top directory is lifted
  if (!unpacked) {
    return ctx.term.fail(unpacked.error());
  }
  if (auto x = ctx.archives().extract(tarball, *unpacked, 1ULL << 31, core::ArchiveOrigin::foreign, {}); !x) {
    return ctx.term.fail(x.error());
  }
  const auto fresh = *unpacked + "/bin/ezpz";
  auto runs = ctx.probe().run_program({fresh, "--version"}, {}, {}, 30);
  if (!runs || runs->exit_code != 0) {
    return ctx.term.fail(failure("the ezpz in " + release->name + " does not run here: nothing replaced"));
  }
  // 4. In place by a rename; the previous one kept as ezpz.old.
  const auto old = *exe + ".old";
  if (auto replaced = ctx.probe().replace_executable(fresh, *exe, old); !replaced) {
    return ctx.term.fail(replaced.error());
  }
  const auto now = std::string(core::trim(runs->output));
  if (ask.json) {
    ctx.term.print_json(nlohmann::json{
        {"ok", true},
        {"from", version_number()},
        {"to", release->version},
        {"binary", *exe},
        {"previous", old},
        {"fetched_with",
         src.tool}}.dump());
  } else {
    ctx.term.out() << "updated " << *exe << ": ezpz " << version_number() << " -> " << now << " (fetched with "
                   << src.tool << "); the previous one is " << old << " (ezpz self-update --rollback)\n";
  }
  return 0;
}

int roll_back(Context& ctx, const Source& src, const Ask& ask) {
  auto exe = own_binary(ctx, src.base);
  if (!exe) {
    return ctx.term.fail(exe.error());
  }
  const auto old = *exe + ".old";
  if (!ctx.probe().is_file(old)) {
    return ctx.term.fail(failure("no previous ezpz to roll back to (" + old + " is kept by an update, once)"));
  }
  auto was = ctx.probe().run_program({old, "--version"}, {}, {}, 30);
  if (auto replaced = ctx.probe().replace_executable(old, *exe, ""); !replaced) {
    return ctx.term.fail(replaced.error());
  }
  const auto back =
      was && was->exit_code == 0 ? std::string(core::trim(was->output)) : std::string("the previous ezpz");
  if (ask.json) {
    ctx.term.print_json(nlohmann::json{{"ok", true}, {"binary", *exe}, {"now", back}}.dump());
  } else {
    ctx.term.out() << "rolled back " << *exe << " to " << back << '\n';
  }
  return 0;
}

}  // namespace

void SelfUpdateCommand::add_cli(CLI::App& app) {
  app.add_flag("--check", check_,
               "Say the installed and the newest version; exit 0 when up to date, 100 when an update exists");
  app.add_option("--version", version_, "Install this version (older ones too) instead of the newest")->type_name("V");
  app.add_option("--base-url", base_url_,
                 "Where releases are (SHA256SUMS, tarballs): default EZPZ_INSTALL_BASE_URL, else the project's "
                 "latest release; HTTPS, or plain HTTP to this machine")
      ->type_name("URL");
  app.add_flag("--rollback", rollback_, "Put back the previous ezpz (ezpz.old, kept by the last update)");
  app.add_flag("--force", force_, "Inside a batch job too; reinstall the version already installed");
  app.add_flag("--json", json_, "One JSON object on stdout");
}

int SelfUpdateCommand::run(Context& ctx) {
  // 1. Not inside a job (unless --force): compute nodes usually have no outbound network.
  if (const auto job = core::batch_job_variable(ctx.env); !job.empty() && !force_) {
    return ctx.term.fail(failure("inside a batch job (" + job +
                                 "): compute nodes usually have no outbound network; run it on a login node, "
                                 "or pass --force"));
  }
  auto src = release_source(ctx, base_url_);
  if (!src) {
    return ctx.term.fail(src.error());
  }
  // 2. Then one of: put back the previous binary, say whether there is a newer one, or install it.
  const Ask ask{version_, force_, json_};
  if (rollback_) {
    return roll_back(ctx, *src, ask);
  }
  return check_ ? check_release(ctx, *src, ask) : update_binary(ctx, *src, ask);
}

}  // namespace ezpz::cli
