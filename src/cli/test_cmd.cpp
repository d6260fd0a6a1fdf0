#include "cli/test_cmd.hpp"

#include <chrono>

#include <CLI/App.hpp>
#include <CLI/Validators.hpp>
#include <nlohmann/json.hpp>

#include "cli/launch.hpp"
#include "cli/launch_report.hpp"
#include "cli/terminal.hpp"
#include "core/base/log.hpp"
#include "core/base/shell.hpp"
#include "core/base/strings.hpp"

namespace ezpz::cli {
namespace {

constexpr const char* kProgram = "ezpz-test-train";

std::string dirname(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

/// The last line of `text` that is not blank ("" when none).
std::string last_line(std::string_view text) {
  std::string_view last;
  for (auto line : core::split(text, '\n')) {
    if (!core::trim(line).empty()) {
      last = core::trim(line);
    }
  }
  return std::string(last);
}

}  // namespace

void TestCommand::add_cli(CLI::App& app) {
  app_ = &app;
  app.add_option("-n,--np,--nproc,--nprocs,--world_size,--world-size", nprocs_,
                 "Total number of processes (aliases -np, --n; default: as launch picks)")
      ->type_name("N");
  app.add_option("--ppn,--nproc_per_node,--nproc-per-node", ppn_, "Processes per host (alias -ppn)")->type_name("N");
  app.add_option("--nhosts,--nh,--nhost,--nnode,--nnodes", nhosts_, "Number of hosts to use (alias -nh)")
      ->type_name("N");
  app.add_option("--hostfile", hostfile_, "File with one host per line (default: the job's own)")->type_name("FILE");
  app.add_option("--machine", machine_, "Use this machine's profile instead of detecting it")->type_name("MACHINE");
  app.add_option("--launcher", launcher_, "Launcher to use instead of the machine's")
      ->check(CLI::IsMember({"mpiexec", "mpirun", "srun", "local"}));
  app.add_option("--cpu-bind", cpu_bind_, "CPU binding for mpiexec/srun")->type_name("BIND");
  app.add_option("--gpu-bind", gpu_bind_, "Pin each rank to one GPU by its local rank")
      ->check(CLI::IsMember({"auto", "cuda", "ze", "rocr", "none"}));
  app.add_option("--train-iters", train_iters_, "Training iterations (default 200)")
      ->type_name("N")
      ->check(CLI::PositiveNumber);
  app.add_option("--batch-size", batch_size_, "Samples per rank and iteration (default 128)")
      ->type_name("N")
      ->check(CLI::PositiveNumber);
  app.add_option("--dtype", dtype_, "Parameter dtype: auto (fp32 on cpu, bf16 on accelerators), fp32, bf16, fp16")
      ->check(CLI::IsMember({"auto", "fp32", "bf16", "fp16"}));
  app.add_option("--tp", tp_, "Tensor parallel size (default 1)")->type_name("N")->check(CLI::PositiveNumber);
  app.add_option("--pp", pp_, "Pipeline parallel size: groups made and reported (default 1)")
      ->type_name("N")
      ->check(CLI::PositiveNumber);
  app.add_option("--cp", cp_, "Context parallel size: groups made and reported (default 1)")
      ->type_name("N")
      ->check(CLI::PositiveNumber);
  app.add_option("--print-freq", print_freq_, "Print every N iterations (default 10)")
      ->type_name("N")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", seed_, "Seed (each rank uses seed*(rank+1)*(local_rank+1))")
      ->type_name("N")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--outdir", outdir_, "Where the run's history, report and JSON go (default outputs/ezpz-test)")
      ->type_name("DIR");
  app.add_option("--engine", engine_,
                 "What trains: cpp (the companion ezpz-test-train), python (a script run with the job's python3 "
                 "and torch), or auto (default: cpp where the companion is installed, else python)")
      ->check(CLI::IsMember({"auto", "python", "cpp"}));
  app.add_option("--python", python_, "The python the Python engine runs on every rank (default: python3 on PATH)")
      ->type_name("PYTHON");
  app.add_option("--program", program_,
                 "The companion program (default: ezpz-test-train beside ezpz; also "
                 "EZPZ_TORCH_TRAIN)")
      ->type_name("FILE");
  app.add_option("--idle-timeout,--timeout", timeout_s_,
                 "Stop the job after this many seconds without output (exit 124)")
      ->type_name("SECONDS")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--json", json_,
               "Print one JSON object: world size, and per rank its tp/pp/cp/dp group members and losses");
  app.add_flag("--dry-run", dry_run_, "Print the launch command instead of running it");
  app.footer(
      "Trains ezpz's MLP (784 -> 512, 256, 128 -> 10) on synthetic MNIST-shaped data with data parallel\n"
      "(and tensor parallel with --tp), printing iter= loss= dt= lines and a summary. Fails when the\n"
      "loss does not fall on every rank or the replicas' parameters differ. Without the companion\n"
      "program the job's own python3 and torch train (scripts/build-companion.sh builds the companion).\n\n"
      "Examples:\n"
      "  ezpz test -n 2 --train-iters 50\n"
      "  ezpz test -n 4 --tp 2 --json");
}

void TestCommand::normalize(std::vector<std::string>& tokens, bool /*had_separator*/) {
  static const std::vector<std::pair<std::string, std::string>> aliases = {
      {"-np", "--np"}, {"--n", "--np"}, {"-ppn", "--ppn"}, {"-nh", "--nh"}, {"-nhosts", "--nhosts"}};
  for (auto& t : tokens) {
    const std::string name = t.substr(0, t.find('='));
    for (const auto& [from, to] : aliases) {
      if (name == from) {
        t = to + t.substr(name.size());
        break;
      }
    }
  }
}

core::LaunchRequest TestCommand::request(const std::vector<std::string>& engine, const std::string& json_out) const {
  core::LaunchRequest r;
  auto set_if = [this](const char* name, auto& field, const auto& value) {
    if (app_->count(name) > 0) {
      field = value;
    }
  };
  set_if("--np", r.topology.nprocs, nprocs_);
  set_if("--ppn", r.topology.ppn, ppn_);
  set_if("--nhosts", r.topology.nhosts, nhosts_);
  set_if("--hostfile", r.hostfile, hostfile_);
  set_if("--machine", r.machine, machine_);
  set_if("--launcher", r.launcher, launcher_);
  set_if("--cpu-bind", r.cpu_bind, cpu_bind_);
  set_if("--gpu-bind", r.gpu_bind, gpu_bind_);
  r.command = engine;
  r.command.insert(
      r.command.end(),
      {"--train-iters", std::to_string(train_iters_), "--batch-size", std::to_string(batch_size_), "--dtype", dtype_,
       "--tp", std::to_string(tp_), "--pp", std::to_string(pp_), "--cp", std::to_string(cp_), "--print-freq",
       std::to_string(print_freq_), "--seed", std::to_string(seed_), "--outdir", outdir_});
  if (!json_out.empty()) {
    r.command.insert(r.command.end(), {"--json-out", json_out});
  }
  return r;
}

Expected<std::string> TestCommand::find_program(const Context& ctx, const std::string& given) {
  if (!given.empty()) {
    if (ctx.probe().is_file(given)) {
      return given;
    }
    return usage_error("--program " + given + " is not a file: give the path of ezpz-test-train");
  }
  if (auto env = ctx.env.get("EZPZ_TORCH_TRAIN")) {
    if (ctx.probe().is_file(*env)) {
      return *env;
    }
    return usage_error("EZPZ_TORCH_TRAIN=" + *env + " is not a file: point it at ezpz-test-train or unset it");
  }
  if (!ctx.env.self_exe.empty()) {
    const auto dir = dirname(ctx.env.self_exe);
    for (const auto& candidate : {dir + "/" + kProgram, dir + "/src/torch/" + kProgram}) {
      if (ctx.probe().is_file(candidate)) {
        return candidate;
      }
    }
  }
  if (auto found = ctx.probe().find_program(kProgram)) {
    return *found;
  }
  if (auto home = ctx.env.get("HOME"); home && ctx.probe().is_file(*home + "/.local/bin/" + kProgram)) {
    return *home + "/.local/bin/" + kProgram;
  }
  return Error{ExitCode::not_found,
               "ezpz test --engine cpp needs the companion program ezpz-test-train, which is not installed: build it "
               "against your torch with scripts/build-companion.sh, set EZPZ_TORCH_TRAIN to its path, or use "
               "--engine python"};
}

Expected<TestEngine> TestCommand::python_engine(const Context& ctx, const std::string& outdir) const {
  // The job's python: --python, else python3 on PATH (the environment the training will use).
  const std::string asked = python_.empty() ? "python3" : python_;
  auto python =
      asked.find('/') != std::string::npos ? std::optional<std::string>(asked) : ctx.probe().find_program(asked);
  if (!python || !ctx.probe().is_file(*python)) {
    return Error{ExitCode::not_found,
                 "no " + asked + " found: activate the environment that has torch, or pass --python PATH"};
  }
  const std::string script = outdir + "/.ezpz-test-train.py";
  if (dry_run_) {  // nothing run, nothing written
    return TestEngine{"python", {*python, script}, *python};
  }
  // It must import torch here, where the job starts (its ranks run the same path).
  auto out = ctx.probe().run_program({*python, "-c", "import torch, torch.distributed; print(torch.__version__)"}, {},
                                     {}, 300);
  if (!out || out->exit_code != 0) {
    const auto said = last_line(out ? out->output : out.error().message);
    const std::string why = said.empty() ? "it failed" : said;
    return Error{ExitCode::not_found, *python + " cannot import torch (" + why +
                                          "): activate the environment that has torch, pass --python PATH, or "
                                          "install it (" +
                                          *python + " -m pip install torch)"};
  }
  const auto version = last_line(out->output);
  // The script goes beside the outputs, which every rank must reach (as --json needs).
  if (auto written = ctx.probe().write_file(script, std::string(test_train_py())); !written) {
    return Error{written.error().code, written.error().message +
                                           ": pass --outdir DIR where you can write (every "
                                           "rank reads it), e.g. --outdir " +
                                           ctx.env.get("HOME").value_or("~") + "/ezpz-test"};
  }
  return TestEngine{"python", {*python, script}, *python + " with torch " + (version.empty() ? "?" : version)};
}

Expected<TestEngine> TestCommand::pick_engine(const Context& ctx, const std::string& outdir) const {
  if (engine_ == "python" && !program_.empty()) {
    return usage_error("--program names the C++ companion: drop it, or use --engine cpp");
  }
  if (engine_ == "python") {
    return python_engine(ctx, outdir);
  }
  auto program = find_program(ctx, program_);
  if (program) {
    return TestEngine{"cpp", {*program}, *program};
  }
  if (engine_ == "cpp" || !program_.empty() || program.error().code == ExitCode::usage) {
    return program.error();
  }
  return python_engine(ctx, outdir);
}

int TestCommand::run(Context& ctx) {
  // 1. Where outputs go (every rank reaches it: the Python script and --json's file live there).
  std::string outdir = outdir_;
  if (!outdir.empty() && outdir[0] != '/') {
    const auto pwd = ctx.env.get("PWD").value_or(".");
    outdir = pwd + (pwd.back() == '/' ? "" : "/") + outdir;  // (in /: /outputs, not //outputs)
  }
  // 2. The engine: the companion program, or the job's python with the script this binary carries.
  auto engine = pick_engine(ctx, outdir);
  if (!engine) {
    return ctx.term.fail(engine.error());
  }
  std::string json_out;
  if (json_) {
    const auto stamp =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    json_out = outdir + "/ezpz-test-" + std::to_string(stamp) + "-" + std::to_string(ctx.env.pid) + ".json";
  }
  // 3. Plan it as launch would, then run it under launch's supervision.
  auto job = plan_job(ctx, request(engine->argv, json_out));
  if (!job) {
    return ctx.term.fail(job.error());
  }
  for (const auto& w : job->plan.warnings) {
    ctx.term.warn(w);
  }
  const auto& plan = job->plan;
  if (dry_run_) {
    ctx.term.out() << dry_run_line(plan) << '\n';
    return 0;
  }
  ctx.term.err() << "ezpz test: engine " << engine->name << " (" << engine->about << ")\n";
  log::info("test: " + core::shell_command_line(plan.env, plan.argv) +
            (json_out.empty() ? "" : "; rank 0's results to " + json_out));
  auto result = run_plan(ctx, plan, SupervisionOptions{timeout_s_, 0, 10, false, nullptr});
  if (!result) {
    return ctx.term.fail(result.error());
  }
  if (result->exit_code != 0) {
    ctx.term.error("ezpz test failed with exit code " + std::to_string(result->exit_code) +
                   " (the ranks' messages are above)");
    return result->exit_code;
  }
  if (json_) {
    auto text = ctx.probe().read_file(json_out);
    if (!text) {
      return ctx.term.fail(failure("the ranks finished but rank 0 wrote no results to " + json_out +
                                   ": is --outdir on a file system every rank and this host share?"));
    }
    // Rank 0's object, with "ok" as every --json success object has it.
    auto j = nlohmann::ordered_json::parse(*text, nullptr, false);
    if (j.is_object()) {
      j["ok"] = true;
      j["engine"] = engine->name;
      ctx.term.print_json(j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
    } else {
      ctx.term.print_json(std::string(core::trim(*text)));
    }
  }
  return 0;
}

}  // namespace ezpz::cli
