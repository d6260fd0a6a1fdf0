// The node side of ezpz doctor: __doctor-node (per-node facts, rank environment).
#include <chrono>
#include <iostream>

#include <CLI/App.hpp>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "cli/doctor.hpp"
#include "cli/reach_options.hpp"
#include "cli/terminal.hpp"
#include "cli/version.hpp"
#include "core/base/log.hpp"
#include "core/base/strings.hpp"
#include "core/doctor/doctor.hpp"
#include "core/reach/spec.hpp"

namespace ezpz::cli {

void DoctorNodeCommand::add_cli(CLI::App& app) {
  app.add_option("--dst", dst_, "Report free space of the filesystem holding this path")->type_name("PATH");
  app.add_option("--exe", exe_, "The head's ezpz path: report whether this node has the same binary there")
      ->type_name("PATH");
  app.add_flag("--rank-env", rank_env_, "Print this rank's torchrun variables as one EZPZ-RANK line and exit");
  app.add_flag("--probe", probe_,
               "Is this node fit to run ranks (launch's failover)? --dst writable, --gpus visible, --need present: "
               "one JSON line, exit 0 when it is");
  app.add_option("--gpus", gpus_, "With --probe: the GPUs this node must show")->type_name("N");
  app.add_option("--need", need_, "With --probe: a program (absolute path) this node must have")->type_name("PATH");
  add_node_log_level(app, log_level_);
}

/// --probe: {"host", "ok", "why"}; the first check that fails is the why.
int DoctorNodeCommand::fitness(Context& ctx) const {
  std::string why;
  // A name no one could have made first (mkdtemp): a directory planted there says nothing of /tmp.
  auto made = ctx.probe().make_dirs(dst_);
  auto dir = made ? ctx.probe().make_private_dir(dst_ + "/.ezpz-probe") : Expected<std::string>(made.error());
  if (!dir || !ctx.probe().remove_empty_dir(*dir)) {
    why = dst_ + " is not writable" + (dir ? "" : " (" + dir.error().message + ")");
  } else if (const int seen = ctx.probe().count_gpu_devices(); seen < gpus_) {
    why = "it shows " + core::count_of(static_cast<std::size_t>(seen), "GPU") + " of the " + std::to_string(gpus_) +
          " expected";
  } else if (!need_.empty() && !ctx.probe().is_file(need_)) {
    why = need_ + " is not there (the command's interpreter: yeet the env to this node)";
  }
  log::info("doctor: fit to run ranks: " + (why.empty() ? std::string("yes") : "no: " + why));
  const nlohmann::json j = {{"host", ctx.env.hostname}, {"ok", why.empty()}, {"why", why}};
  ctx.term.out() << j.dump() << '\n' << std::flush;
  return why.empty() ? 0 : 1;
}

int DoctorNodeCommand::run(Context& ctx) {
  start_node_logging(log_level_, ctx.env.hostname);
  if (probe_) {
    return fitness(ctx);
  }
  if (rank_env_) {
    ctx.term.out() << core::encode_rank_line(ctx.env) << '\n' << std::flush;
    return 0;
  }
  // Everything but the clock is measured before the ping, so the answer is immediate.
  core::NodeFacts facts;
  facts.hostname = ctx.env.hostname;
  facts.dst = core::existing_ancestor(dst_, ctx.probe());
  if (auto space = ctx.probe().disk_space(facts.dst)) {
    facts.dst_free = space->free_bytes;
  }
  facts.version = std::string(version_number());
  facts.exe_present = !exe_.empty() && ctx.probe().is_file(exe_);
  // The same file, or the same bytes (a copy the launcher shipped: srun --bcast).
  auto same_bytes = [&] {
    const auto theirs = ctx.probe().file_digest(exe_);
    return !theirs.empty() && theirs == ctx.probe().self_digest().first;
  };
  facts.exe_same =
      facts.exe_present && (ctx.probe().real_path(exe_) == ctx.probe().real_path(ctx.env.self_exe) || same_bytes());
  log::info("doctor: " + facts.dst + " has " + core::human_bytes(facts.dst_free) + " free; ezpz at " + exe_ + ": " +
            (!facts.exe_present ? "none"
             : facts.exe_same   ? "this one"
                                : "another"));
  ctx.term.out() << core::kReadyLine << '\n' << std::flush;
  std::string ping;
  if (!std::getline(std::cin, ping)) {
    return 1;
  }
  facts.time_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  ctx.term.out() << core::encode_node_facts(facts) << '\n' << std::flush;
  return 0;
}

}  // namespace ezpz::cli
