#include <catch2/catch.hpp>

#include <set>

#include <nlohmann/json.hpp>

#include "cli/launch.hpp"
#include "cli_fixture.hpp"

using ezpz::cli::Cli;
using ezpz::cli::LaunchCommand;
using ezpz::cli::Terminal;
using Strings = std::vector<std::string>;

namespace {

struct Parsed {
  int rc = -1;
  bool ran = false;
  std::string out, err;
  ezpz::core::LaunchRequest request;
  std::string request_error;
};

Parsed parse(const Strings& args) {
  Cli cli;
  std::ostringstream out, err;
  Terminal term(out, err, ezpz::cli::Colors::none());
  auto p = cli.parse(args, term);
  Parsed r{p.exit_code, p.command != nullptr, out.str(), err.str(), {}, {}};
  if (auto* launch = dynamic_cast<LaunchCommand*>(p.command)) {
    r.request = launch->request();
    r.request_error = launch->request_error();
  }
  return r;
}

}  // namespace

TEST_CASE("launch: sizes and their ezpz aliases", "[cli]") {
  for (const Strings& flag :
       {Strings{"-n", "8"}, Strings{"-np", "8"}, Strings{"--np", "8"}, Strings{"--n", "8"}, Strings{"--nproc", "8"},
        Strings{"--nprocs", "8"}, Strings{"--world_size", "8"}, Strings{"-np=8"}, Strings{"--np=8"}, Strings{"-n8"}}) {
    Strings args{"launch"};
    args.insert(args.end(), flag.begin(), flag.end());
    args.insert(args.end(), {"--", "true"});
    INFO(flag[0]);
    auto p = parse(args);
    REQUIRE(p.ran);
    CHECK(p.request.topology.nprocs == 8);
  }
  for (const char* f : {"-ppn", "--ppn", "--nproc_per_node"}) {
    CHECK(parse({"launch", f, "4", "--", "true"}).request.topology.ppn == 4);
  }
  for (const char* f : {"-nh", "--nh", "--nhost", "--nhosts", "--nnode", "--nnodes"}) {
    INFO(f);
    CHECK(parse({"launch", f, "2", "--", "true"}).request.topology.nhosts == 2);
  }
  auto none = parse({"launch", "--", "true"});
  CHECK_FALSE(none.request.topology.nprocs);
  CHECK_FALSE(none.request.topology.ppn);
  CHECK_FALSE(none.request.topology.nhosts);
}

TEST_CASE("launch: unknown flags before -- go to the launcher, in order", "[cli]") {
  auto p = parse({"launch", "-n", "2", "-x", "A=1", "-x", "B=2", "--no-vni", "--", "python3", "-m", "m", "--fsdp"});
  REQUIRE(p.ran);
  CHECK(p.request.topology.nprocs == 2);
  CHECK(p.request.launcher_args == Strings{"-x", "A=1", "-x", "B=2", "--no-vni"});
  CHECK(p.request.command == Strings{"python3", "-m", "m", "--fsdp"});
  CHECK(p.request_error.empty());
}

TEST_CASE("launch: the command after -- is never reinterpreted", "[cli]") {
  auto p = parse({"launch", "--", "python3", "train.py", "--help", "-n", "5", "--dry-run", "--", "x"});
  REQUIRE(p.ran);
  CHECK(p.out.empty());  // no launch help printed
  CHECK(p.request.command == Strings{"python3", "train.py", "--help", "-n", "5", "--dry-run", "--", "x"});
  CHECK_FALSE(p.request.topology.nprocs);
}

TEST_CASE("launch: without --, the command starts at the first word", "[cli]") {
  auto p = parse({"launch", "--nproc", "2", "python", "-m", "demo", "--flag", "-n", "3", "--help"});
  REQUIRE(p.ran);
  CHECK(p.request.topology.nprocs == 2);
  CHECK(p.request.command == Strings{"python", "-m", "demo", "--flag", "-n", "3", "--help"});
  auto q = parse({"launch", "-x", "A=1", "python3", "t.py"});
  REQUIRE(q.ran);
  CHECK_THAT(q.request_error, Catch::Contains("unknown option -x before the command"));
}

TEST_CASE("launch: options with values", "[cli]") {
  auto p = parse({"launch", "--hostfile", "/h f", "--machine", "aurora", "--launcher", "srun", "--cpu-bind", "list:1-2",
                  "--dry-run", "--json", "--", "true"});
  REQUIRE(p.ran);
  CHECK(p.request.hostfile == "/h f");
  CHECK(p.request.machine == "aurora");
  CHECK(p.request.launcher == "srun");
  CHECK(p.request.cpu_bind == "list:1-2");
}

TEST_CASE("parse errors exit 2 with a one-line reason, never CLI11's own codes", "[cli]") {
  for (const Strings& args :
       {Strings{"launch", "--launcher", "pbsdsh", "--", "x"}, Strings{"launch", "-n", "x"}, Strings{"bogus"},
        Strings{"--bogus"}, Strings{"completions", "tcsh"}, Strings{"completions"}, Strings{}}) {
    INFO((args.empty() ? std::string("(none)") : args[0]));
    auto p = parse(args);
    CHECK_FALSE(p.ran);
    CHECK(p.rc == 2);
    CHECK_FALSE(p.err.empty());
  }
  CHECK_THAT(parse({"launch", "--launcher", "pbsdsh", "--", "x"}).err, Catch::StartsWith("ezpz: error: --launcher"));
}

TEST_CASE("version and help output", "[cli]") {
  auto v = parse({"--version"});
  CHECK(v.rc == 0);
  CHECK_FALSE(v.ran);
  CHECK_THAT(v.out, Catch::StartsWith("ezpz ") && Catch::Contains(" (commit ") && Catch::Contains(", built "));
  CHECK(parse({"-V"}).out == v.out);
  auto h = parse({"--help"});
  CHECK(h.rc == 0);
  CHECK_THAT(h.out, Catch::Contains("launch") && Catch::Contains("completions"));
  auto lh = parse({"launch", "--help"});
  CHECK(lh.rc == 0);
  CHECK_THAT(lh.out, Catch::Contains("--hostfile") && Catch::Contains("Examples"));

  ezpz::test::FakeProbe probe;
  auto env = ezpz::test::make_env({});
  auto help = ezpz::test::run_cli({"help", "launch"}, env, probe);
  CHECK(help.rc == 0);
  CHECK_THAT(help.out, Catch::Contains("ezpz launch") && Catch::Contains("--cpu-bind"));
  CHECK(ezpz::test::run_cli({"help", "nothing"}, env, probe).rc == 2);
}

// (No ';' in a test's name: ctest's discovery cuts the name there, runs nothing and passes.)
TEST_CASE("run: --dry-run --json prints the plan, and without --dry-run it execs exactly argv", "[cli]") {
  ezpz::test::FakeProbe probe;
  probe.files["/pbs/nf"] = "x4000c0s0b0n0\nx4000c0s1b0n0\n";
  // The real run looks the high-speed name up (--dry-run does not): it resolves here.
  probe.resolvable.insert("x4000c0s0b0n0.hsn.cm.aurora.alcf.anl.gov");
  probe.programs["mpiexec"] = "/opt/cray/pals/bin/mpiexec";
  auto env = ezpz::test::make_env({{"PBS_JOBID", "9.aurora"}, {"PBS_NODEFILE", "/pbs/nf"}}, "x4000c0s0b0n0");
  auto r = ezpz::test::run_cli({"launch", "--dry-run", "--json", "-n", "8", "--", "python3", "-c", "1"}, env, probe);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["scheduler"] == "pbs");
  CHECK(j["machine"] == "aurora");
  CHECK(j["nhosts"] == 2);
  CHECK(j["ppn"] == 4);
  CHECK(j["nprocs"] == 8);
  CHECK(j["launcher"] == "mpiexec");
  CHECK(j["hosts"] == nlohmann::json::array({"x4000c0s0b0n0", "x4000c0s1b0n0"}));
  CHECK(j["argv"].back() == "1");
  CHECK(j["env"]["CCL_PROCESS_LAUNCHER"] == "pmix");

  ezpz::test::FakeProcess process;
  process.exit_codes = {7};
  auto run = ezpz::test::run_cli({"launch", "-n", "8", "--", "python3", "-c", "1"}, env, probe, &process);
  CHECK(run.rc == 7);  // the job's own code
  REQUIRE(process.runs.size() == 1);
  REQUIRE(process.runs[0].size() == 1);
  CHECK(process.runs[0][0].argv == j["argv"].get<Strings>());
  // The plan's two variables, and the rank hub's address and key the ranks' shims call back to.
  std::set<std::string> names;
  for (const auto& [k, v] : process.runs[0][0].set) {
    names.insert(k);
  }
  CHECK(names ==
        std::set<std::string>{"CCL_PROCESS_LAUNCHER", "FI_MR_CACHE_MONITOR", "EZPZ_RANK_HUB", "EZPZ_RANK_HUB_KEY"});
  CHECK(process.runs[0][0].unset.size() == 6);
  CHECK(process.run_options[0].is_launcher);

  auto text = ezpz::test::run_cli({"launch", "--dry-run", "-n", "8", "--", "python3", "-c", "a b"}, env, probe);
  CHECK_THAT(text.out, Catch::StartsWith("CCL_PROCESS_LAUNCHER=pmix FI_MR_CACHE_MONITOR=userfaultfd mpiexec "));
  CHECK_THAT(text.out, Catch::EndsWith("python3 -c 'a b'\n"));
}

TEST_CASE("run: usage problems exit 2 with one line", "[cli]") {
  ezpz::test::FakeProbe probe;
  auto env = ezpz::test::make_env({});
  for (const Strings& args : {Strings{"launch", "--dry-run", "--hostfile", "/missing", "--", "x"},
                              Strings{"launch", "--dry-run", "--machine", "nowhere", "--", "x"},
                              Strings{"launch", "--dry-run", "-n", "0", "--", "x"}, Strings{"launch", "--dry-run"},
                              Strings{"launch", "--dry-run", "-x", "1", "t.py"}}) {
    INFO(args.back());
    auto r = ezpz::test::run_cli(args, env, probe);
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::StartsWith("ezpz: error: "));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.out.empty());
  }
}

TEST_CASE("run: retries back off 5, 10, 20, 40, 60 s and stop at the first success", "[cli]") {
  CHECK(ezpz::cli::retry_delay(0, 5) == 5);
  CHECK(ezpz::cli::retry_delay(1, 5) == 10);
  CHECK(ezpz::cli::retry_delay(3, 5) == 40);
  CHECK(ezpz::cli::retry_delay(4, 5) == 60);
  CHECK(ezpz::cli::retry_delay(9, 5) == 60);
  CHECK(ezpz::cli::retry_delay(2, 0) == 0);

  ezpz::test::FakeProbe probe;
  auto env = ezpz::test::make_env({{"EZPZ_HOME", "/ez"}});
  env.pid = 7;
  ezpz::test::FakeProcess process;
  process.exit_codes = {1, 1, 0};
  auto r = ezpz::test::run_cli({"launch", "--launcher", "local", "--retries", "5", "-n", "2", "--", "t"}, env, probe,
                               &process);
  CHECK(r.rc == 0);
  CHECK(process.runs.size() == 3);
  CHECK(process.sleeps == std::vector<double>{5, 10});
  REQUIRE(probe.written.size() == 1);
  auto record = nlohmann::json::parse(probe.written.begin()->second);
  CHECK_THAT(probe.written.begin()->first, Catch::StartsWith("/ez/jobs/local-") && Catch::EndsWith("-7.json"));
  CHECK(record["attempts"] == 3);
  CHECK(record["exit_code"] == 0);
  CHECK(record["command"] == nlohmann::json::array({"t"}));

  ezpz::test::FakeProcess failing;
  failing.exit_codes = {3};
  auto f = ezpz::test::run_cli({"launch", "--launcher", "local", "--retries", "2", "--", "t"}, env, probe, &failing);
  CHECK(f.rc == 3);
  CHECK(failing.runs.size() == 3);
}

TEST_CASE("run: --console-ranks picks the ranks the terminal shows, --log-dir where the files go", "[cli]") {
  ezpz::test::FakeProbe probe;
  auto env = ezpz::test::make_env({{"HOME", "/h"}, {"PWD", "/work"}}, "box");
  ezpz::test::FakeProcess process;
  auto r = ezpz::test::run_cli(
      {"launch", "--launcher", "local", "-n", "4", "--local-ranks-filter", "1,3", "--log-dir", "logs", "--", "t"}, env,
      probe, &process);
  CHECK(r.rc == 0);
  REQUIRE(process.runs.size() == 1);
  const auto& ranks = process.runs[0];
  REQUIRE(ranks.size() == 4);
  CHECK_FALSE(ranks[0].console);
  CHECK(ranks[1].console);
  CHECK_FALSE(ranks[2].console);
  CHECK(ranks[3].console);
  // Each launch its own directory in --log-dir, `latest` pointing at it.
  REQUIRE(probe.pointed.count("/work/logs/latest") == 1);
  const auto own = probe.pointed.at("/work/logs/latest");
  CHECK_THAT(own, Catch::StartsWith("launch-"));
  CHECK(ranks[3].log_out == "/work/logs/" + own + "/rank-3.box.out");
  auto bad = ezpz::test::run_cli({"launch", "--launcher", "local", "--console-ranks", "x", "--", "t"}, env, probe);
  CHECK(bad.rc == 2);
  CHECK_THAT(bad.err, Catch::Contains("--console-ranks x is not a list of ranks"));
}

TEST_CASE("run: an MPI launcher gets the rank hub in its environment and the shim its files", "[cli]") {
  ezpz::test::FakeProbe probe;
  probe.programs = {{"mpirun", "/usr/bin/mpirun"}};
  auto env = ezpz::test::make_env({{"HOME", "/h"}}, "box");
  ezpz::test::FakeProcess process;
  auto r = ezpz::test::run_cli({"launch", "--launcher", "mpirun", "-n", "2", "--console-ranks", "0", "--", "t"}, env,
                               probe, &process);
  CHECK(r.rc == 0);
  REQUIRE(process.runs.size() == 1);
  const auto& launcher = process.runs[0].at(0);
  auto has_var = [&](const std::string& k) {
    return std::any_of(launcher.set.begin(), launcher.set.end(), [&](const auto& kv) { return kv.first == k; });
  };
  CHECK(has_var("EZPZ_RANK_HUB"));
  CHECK(has_var("EZPZ_RANK_HUB_KEY"));
  CHECK(process.run_options[0].side != nullptr);
  const auto& argv = launcher.argv;
  const Strings forward = {"-x", "EZPZ_RANK_HUB_KEY"};
  CHECK(std::search(argv.begin(), argv.end(), forward.begin(), forward.end()) != argv.end());
  CHECK(std::find(argv.begin(), argv.end(), "--console-ranks=0") != argv.end());
  CHECK(std::any_of(argv.begin(), argv.end(),
                    [](const std::string& a) { return a.rfind("--log-dir=/h/.ezpz/", 0) == 0; }));
}

TEST_CASE("run: the built-in launcher gives each rank its environment and label", "[cli]") {
  ezpz::test::FakeProbe probe;
  auto env = ezpz::test::make_env({{"HOME", "/h"}}, "box");
  ezpz::test::FakeProcess process;
  auto r = ezpz::test::run_cli({"launch", "--launcher", "local", "--label", "-n", "3", "--timeout", "9", "--", "t"},
                               env, probe, &process);
  CHECK(r.rc == 0);
  REQUIRE(process.runs.size() == 1);
  const auto& ranks = process.runs[0];
  REQUIRE(ranks.size() == 3);
  CHECK(ranks[2].label == "[box 2] ");  // --label names the host
  CHECK(ranks[2].argv == Strings{"t"});
  CHECK(ranks[2].console);
  CHECK_THAT(ranks[2].log_err, Catch::StartsWith("/h/.ezpz/jobs/local-") && Catch::EndsWith("/rank-2.box.err"));
  auto has = [](const ezpz::core::ProcessSpec& p, const std::string& k, const std::string& v) {
    return std::find(p.set.begin(), p.set.end(), std::pair{k, v}) != p.set.end();
  };
  CHECK(has(ranks[2], "RANK", "2"));
  CHECK(has(ranks[2], "WORLD_SIZE", "3"));
  CHECK(has(ranks[2], "LOCAL_RANK", "2"));
  CHECK(has(ranks[2], "MASTER_ADDR", "127.0.0.1"));
  CHECK(has(ranks[2], "MASTER_PORT", "29500"));
  const auto& options = process.run_options[0];
  CHECK(options.label);
  CHECK(options.timeout_s == 9);
  CHECK(options.stop_on_failure);
  CHECK(options.names[1] == "rank 1 on box");
  // A record write that fails is a warning, not a failed job.
  probe.writes_fail = true;
  auto w = ezpz::test::run_cli({"launch", "--launcher", "local", "--", "t"}, env, probe, &process);
  CHECK(w.rc == 0);
  CHECK_THAT(w.err, Catch::Contains("job record not saved"));
}

TEST_CASE("launch: ezpz's flags count anywhere before --, only unknown ones go to the launcher", "[cli]") {
  auto p = parse({"launch", "-x", "FOO=1", "--dry-run", "-n", "2", "--", "python3", "train.py"});
  REQUIRE(p.ran);
  CHECK(p.request.launcher_args == Strings{"-x", "FOO=1"});
  CHECK(p.request.topology.nprocs == 2);
  CHECK(p.request_error.empty());
  auto mixed = parse({"launch", "--mca", "btl", "self", "--label", "-genv", "A", "1", "--ppn=2", "--", "true"});
  CHECK(mixed.request.launcher_args == Strings{"--mca", "btl", "self", "-genv", "A", "1"});
  CHECK(mixed.request.label);
  CHECK(mixed.request.topology.ppn == 2);
}

TEST_CASE("launch: near misses of ezpz's flags and torchrun's own flags are usage errors", "[cli]") {
  struct Case {
    Strings args;
    const char* says;
  };
  for (const auto& c : std::vector<Case>{
           {{"launch", "--dryrun", "-n", "2", "--", "x"}, "unknown flag --dryrun: did you mean --dry-run?"},
           {{"launch", "--labels", "--", "x"}, "unknown flag --labels: did you mean --label?"},
           {{"launch", "--hostfle", "h", "--", "x"}, "did you mean --hostfile?"},
           {{"launch", "-dry-run", "--", "x"}, "did you mean --dry-run?"},
           {{"launch", "--standalone", "--", "x"}, "--standalone is torchrun's"},
           {{"launch", "--rdzv-backend=c10d", "--", "x"}, "ezpz uses no rendezvous server"},
           {{"launch", "--rdzv_endpoint", "h:1", "--", "x"}, "ezpz uses no rendezvous server"},
           {{"launch", "--rdzv-id", "7", "--", "x"}, "ezpz uses no rendezvous server"},
           {{"launch", "--max-restarts", "3", "--", "x"}, "use --retries N"},
           {{"launch", "--nnodes=1:4", "--", "x"}, "--nnodes 1:4 is torchrun's elastic range"},
           {{"launch", "--nnodes", "2:4", "--", "x"}, "--nnodes 2:4 is torchrun's elastic range"},
           {{"launch", "--nproc-per-node=gpu", "--", "x"}, "leave it out"},
           {{"launch", "--master-port", "1", "--", "x"}, "ezpz gives every rank NODE_RANK, MASTER_ADDR"},
       }) {
    INFO(c.args[1]);
    auto p = parse(c.args);
    CHECK_THAT(p.request_error, Catch::Contains(c.says));
  }
  // Launcher flags near one of ezpz's pass through.
  for (const char* flag : {"--nodes=2", "--hosts", "--gpus=4", "--envall", "--depth=8", "-launcher", "--overlap"}) {
    INFO(flag);
    auto p = parse({"launch", flag, "--", "x"});
    CHECK(p.request_error.empty());
  }
}

TEST_CASE("run: the quoted commands that used to start the wrong job run nothing", "[cli]") {
  ezpz::test::FakeProbe probe;
  probe.programs["mpirun"] = "/usr/bin/mpirun";
  auto env = ezpz::test::make_env({});
  ezpz::test::FakeProcess process;
  auto dry = ezpz::test::run_cli(
      {"launch", "--launcher", "mpirun", "-x", "FOO=1", "--dry-run", "-n", "2", "--", "python3", "train.py"}, env,
      probe, &process);
  CHECK(dry.rc == 0);
  CHECK_THAT(dry.out, Catch::StartsWith("mpirun -np 2 "));
  CHECK_THAT(dry.out, Catch::Contains(" -x FOO=1 "));
  for (const Strings& args :
       {Strings{"launch", "--dryrun", "-n", "2", "--", "python3", "train.py"},
        Strings{"launch", "--labels", "--", "python3", "train.py"},
        Strings{"launch", "--standalone", "--nproc-per-node", "4", "--", "python3", "t.py"},
        Strings{"launch", "-n", "2", "--", "train.py", "--lr", "3"}, Strings{"launch", "-n", "2", "train.py"}}) {
    INFO(args[1] + " " + args.back());
    auto r = ezpz::test::run_cli(args, env, probe, &process);
    CHECK(r.rc == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  CHECK(process.runs.empty());
  auto py = ezpz::test::run_cli({"launch", "--", "train.py"}, env, probe, &process);
  CHECK_THAT(py.err, Catch::Contains("did you mean python3 train.py?"));
  // A Python file with a #! line is a program.
  probe.files["./tool.py"] = "#!/usr/bin/env python3\nprint(1)\n";
  CHECK(ezpz::test::run_cli({"launch", "--dry-run", "--", "./tool.py"}, env, probe, &process).rc == 0);
  CHECK(process.runs.empty());
}

TEST_CASE("json mode: a failure prints one object with the exit code, once, without colour", "[cli]") {
  ezpz::test::FakeProbe probe;
  probe.files["/pbs/nf"] = "x4000c0s0b0n0\nnode[1-\n";
  auto env = ezpz::test::make_env({{"PBS_JOBID", "9.aurora"}, {"PBS_NODEFILE", "/pbs/nf"}}, "x4000c0s0b0n0");
  for (const Strings& args :
       {Strings{"launch", "--dry-run", "--json", "--", "true"}, Strings{"launch", "--json", "-n", "two", "--", "true"},
        Strings{"kill", "--json", "-x"}}) {
    INFO(args[1] + " " + args[2]);
    auto r = ezpz::test::run_cli(args, env, probe);
    CHECK(r.rc == 2);
    REQUIRE(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["ok"] == false);
    CHECK(j["command"] == args[0]);
    CHECK(j["exit_code"] == 2);
    const auto error = j["error"].get<std::string>();
    CHECK_THAT(r.err, Catch::StartsWith("ezpz: error: " + error + "\n"));
    CHECK(j["errors"].size() == 1);
    CHECK(j["unchanged"].empty());
  }
  CHECK_THAT(ezpz::test::run_cli({"launch", "--dry-run", "--json", "--", "true"}, env, probe).out,
             Catch::Contains("hostfile /pbs/nf line 2: 'node[1-'"));
  // Without --json, or a command without --json: stdout stays empty.
  CHECK(ezpz::test::run_cli({"launch", "--dry-run", "--", "true"}, env, probe).out.empty());
  CHECK(ezpz::test::run_cli({"plot", "--json"}, env, probe).out.empty());

  std::ostringstream out, err;
  Terminal term(out, err, ezpz::cli::Colors::both());  // colour on stderr
  term.set_json("yeet");
  term.set_unchanged({"/tmp/env"});
  term.error("first");
  term.error("second");
  term.finish(1);
  auto j = nlohmann::json::parse(out.str());
  CHECK(j["error"] == "first");
  CHECK(j["errors"] == nlohmann::json::array({"first", "second"}));
  CHECK(j["unchanged"] == nlohmann::json::array({"/tmp/env"}));
  CHECK(out.str().find('\033') == std::string::npos);
  CHECK(err.str().find('\033') != std::string::npos);

  std::ostringstream out2, err2;
  Terminal printed(out2, err2, ezpz::cli::Colors::none());
  printed.set_json("kill");
  printed.print_json("{\"host\":\"a\"}");
  printed.error("a node was not reached");
  printed.finish(1);  // its own JSON came first: no second object
  printed.finish(0);
  CHECK(out2.str() == "{\"host\":\"a\"}\n");
  Terminal silent(out2, err2, ezpz::cli::Colors::none());
  silent.set_json("env");
  silent.finish(3);  // no error line: one saying what failed
  CHECK_THAT(out2.str(), Catch::Contains("\"error\":\"ezpz env failed with exit code 3\""));
}
