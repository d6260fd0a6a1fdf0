#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>
#include <sstream>

#include "core/job/job_env.hpp"
#include "core/job/kill.hpp"

using namespace ezpz::core;

namespace {
std::string golden(const std::string& name) {
  std::ifstream in(std::string(EZPZ_SOURCE_DIR) + "/tests/data/submit/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
SubmitSpec spec(Scheduler s) {
  SubmitSpec spec;
  spec.scheduler = s;
  spec.nodes = 2;
  spec.walltime = "90";
  spec.queue = "debug";
  spec.account = "MyProj";
  spec.job_name = "smoke";
  spec.env = {{"WANDB_MODE", "offline"}, {"NOTE", "it's $HOME"}};
  spec.workdir = "/home/me/my project";
  spec.ezpz = "/soft/ezpz/bin/ezpz";
  spec.launch_args = {"--ppn=4"};
  spec.command = {"python3", "-m", "app.train", "--lr", "1e-3; rm -rf ~"};
  return spec;
}
}  // namespace

TEST_CASE("env: export lines quote every value, per shell", "[job_env]") {
  const std::vector<std::pair<std::string, std::string>> vars = {{"NHOSTS", "2"}, {"X", "a b'c\\d"}};
  CHECK(export_lines(vars, ShellKind::bash) == "export NHOSTS=2;\nexport X='a b'\\''c\\d';\n");
  CHECK(export_lines(vars, ShellKind::fish) == "set -gx NHOSTS '2';\nset -gx X 'a b\\'c\\\\d';\n");
  CHECK(shell_from_string("zsh") == ShellKind::zsh);
  CHECK_FALSE(shell_from_string("csh"));
}

TEST_CASE("env: a command variable runs as written in each shell", "[job_env]") {
  const std::vector<std::string> words = {"/opt/my ezpz/ezpz", "launch", "--"};
  CHECK(command_line_var("EZPZ_LAUNCH", words, ShellKind::bash) ==
        "export EZPZ_LAUNCH=''\\''/opt/my ezpz/ezpz'\\'' launch --';\n");
  CHECK(command_line_var("EZPZ_LAUNCH", words, ShellKind::zsh) ==
        "typeset -ga EZPZ_LAUNCH; EZPZ_LAUNCH=('/opt/my ezpz/ezpz' launch --);\n");
  CHECK(command_line_var("EZPZ_LAUNCH", words, ShellKind::fish) ==
        "set -gx EZPZ_LAUNCH '/opt/my ezpz/ezpz' 'launch' '--';\n");
}

TEST_CASE("submit: walltime formats, normalised, bad ones named", "[job_env]") {
  CHECK(*check_walltime("01:00:00", Scheduler::pbs) == "01:00:00");
  CHECK(*check_walltime("1:30:00", Scheduler::pbs) == "01:30:00");
  CHECK(*check_walltime("90", Scheduler::pbs) == "01:30:00");
  CHECK(*check_walltime("30:15", Scheduler::pbs) == "00:30:15");
  CHECK(*check_walltime("100:00:00", Scheduler::pbs) == "100:00:00");
  CHECK(*check_walltime("1-12", Scheduler::slurm) == "36:00:00");
  CHECK(*check_walltime("2-00:30:00", Scheduler::slurm) == "48:30:00");
  for (const char* bad : {"", "1h", "01:60:00", "1:2:3:4", "-5", "0", "00:00:00", "1-12"}) {
    auto r = check_walltime(bad, Scheduler::pbs);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ezpz::ExitCode::usage);
  }
  CHECK(check_walltime("1-12", Scheduler::pbs).error().message.find("HH:MM:SS") != std::string::npos);
}

TEST_CASE("submit: --env NAME=VALUE", "[job_env]") {
  CHECK(parse_env_assignment("A_1=x=y")->second == "x=y");
  CHECK_FALSE(parse_env_assignment("1A=x"));
  CHECK_FALSE(parse_env_assignment("A B=x"));
  CHECK_FALSE(parse_env_assignment("novalue"));
}

TEST_CASE("submit: golden PBS and Slurm scripts, the command stays data", "[job_env]") {
  CHECK(*render_submit_script(spec(Scheduler::pbs)) == golden("pbs.sh"));
  auto slurm = spec(Scheduler::slurm);
  slurm.filesystems.clear();
  CHECK(*render_submit_script(slurm) == golden("slurm.sh"));
  auto bad = spec(Scheduler::pbs);
  bad.nodes = 0;
  CHECK(render_submit_script(bad).error().message.find("--nodes") != std::string::npos);
  bad = spec(Scheduler::pbs);
  bad.job_name = "a b";
  CHECK_FALSE(render_submit_script(bad));
  bad = spec(Scheduler::pbs);
  bad.command.clear();
  CHECK_FALSE(render_submit_script(bad));
  CHECK_FALSE(render_submit_script(spec(Scheduler::local)));
}

TEST_CASE("submit: the active env, and the job id in qsub's or sbatch's answer", "[job_env]") {
  Env env;
  CHECK(active_env(env).kind == ActiveEnv::Kind::none);
  env.vars = {{"CONDA_PREFIX", "/opt/conda/envs/t"}, {"CONDA_EXE", "/opt/conda/bin/conda"}};
  auto a = active_env(env);
  CHECK((a.kind == ActiveEnv::Kind::conda && a.prefix == "/opt/conda/envs/t" && a.conda_base == "/opt/conda"));
  env.vars["VIRTUAL_ENV"] = "/home/u/venvs/x";  // a venv on top of conda: the venv is what runs
  a = active_env(env);
  CHECK((a.kind == ActiveEnv::Kind::venv && a.prefix == "/home/u/venvs/x"));
  auto s = spec(Scheduler::pbs);
  s.activate = a;
  CHECK_THAT(*render_submit_script(s), Catch::Contains("\n. /home/u/venvs/x/bin/activate\nexec "));
  s.activate = {ActiveEnv::Kind::conda, "/opt/conda/envs/t", "/opt/conda"};
  CHECK_THAT(*render_submit_script(s), Catch::Contains("\n. /opt/conda/bin/activate /opt/conda/envs/t\n"));
  s.activate = {ActiveEnv::Kind::conda, "/opt/e", ""};
  CHECK_THAT(*render_submit_script(s), Catch::Contains("export PATH=/opt/e/bin:\"$PATH\"\n"));

  CHECK(submitted_job_id("8817.aurora-pbs-0001.hostmgmt.cm.aurora.alcf.anl.gov\n", Scheduler::pbs) ==
        "8817.aurora-pbs-0001.hostmgmt.cm.aurora.alcf.anl.gov");
  CHECK(submitted_job_id("4242.pbs01\n", Scheduler::pbs) == "4242.pbs01");
  CHECK_FALSE(submitted_job_id("qsub: Unknown queue\n", Scheduler::pbs));
  CHECK(submitted_job_id("Submitted batch job 77\n", Scheduler::slurm) == "77");
  CHECK(submitted_job_id("sbatch: warning: x\nSubmitted batch job 1234 on cluster c\n", Scheduler::slurm) == "1234");
  CHECK_FALSE(submitted_job_id("sbatch: error: Batch job submission failed\n", Scheduler::slurm));
}

TEST_CASE("submit --yeet: the env copied to every node, then run from the copy, and --machine named to the launch",
          "[job_env]") {
  auto s = spec(Scheduler::pbs);
  s.activate = {ActiveEnv::Kind::venv, "/lus/flare/me/venvs/my env", ""};
  s.yeet_src = "/lus/flare/me/venvs/my env";
  s.yeet_dst = "/tmp/my env";
  s.machine = "aurora";
  const auto text = *render_submit_script(s);
  CHECK_THAT(text, Catch::Contains(
                       "\n. '/lus/flare/me/venvs/my env/bin/activate'\n"
                       "# the env copied to node-local storage on every node, then run from that copy\n"
                       "/soft/ezpz/bin/ezpz yeet --compress --src '/lus/flare/me/venvs/my env' --dst '/tmp/my env'\n"
                       "if [ -f '/tmp/my env'/bin/activate ]; then . '/tmp/my env'/bin/activate; else export "
                       "CONDA_PREFIX='/tmp/my env' PATH='/tmp/my env'/bin:\"$PATH\"; fi\n"
                       "exec /soft/ezpz/bin/ezpz launch --machine=aurora --ppn=4 -- "));
  // The copy comes after the original's activation and before the launch, under set -e.
  CHECK(text.find("set -e\n") < text.find(" yeet --compress"));
  CHECK(text.find(" yeet --compress") < text.find("exec "));
}

TEST_CASE("kill: signal names and which processes are targets", "[kill]") {
  CHECK(signal_from_string("TERM") == SIGTERM);
  CHECK(signal_from_string("sigkill") == SIGKILL);
  CHECK(signal_from_string("2") == SIGINT);
  CHECK_FALSE(signal_from_string("STOP"));
  CHECK_FALSE(signal_from_string("99"));
  CHECK(signal_name(SIGHUP) == "SIGHUP");
  const std::vector<ProcessInfo> procs = {{10, 1, "python3 train.py", "x1:29500"},
                                          {11, 10, "python3 -c pass", "x1:29500"},
                                          {12, 1, "python3 train.py", ""},
                                          {13, 1, "python3 eval.py", "x2:4000"},
                                          {14, 1, "ezpz kill", "x1:29500"}};
  auto ids = [](const std::vector<ProcessInfo>& v) {
    std::vector<int> out;
    for (const auto& p : v) {
      out.push_back(p.pid);
    }
    return out;
  };
  CHECK(ids(select_kill_targets(procs, "", {14}, 0, false)) == std::vector<int>{10, 11, 13});
  CHECK(ids(select_kill_targets(procs, "train", {14}, 0, false)) == std::vector<int>{10});
  CHECK(ids(select_kill_targets(procs, "x2:", {14}, 0, false)) == std::vector<int>{13});
  // Root sees every user's processes, and signals only its own unless --all-users.
  auto mixed = procs;
  mixed[0].uid = 1001;  // another user's train.py
  CHECK(ids(select_kill_targets(mixed, "", {14}, 0, false)) == std::vector<int>{11, 13});
  CHECK(ids(select_kill_targets(mixed, "", {14}, 0, true)) == std::vector<int>{10, 11, 13});
  CHECK(ids(select_kill_targets(mixed, "", {14}, 1001, false)) == std::vector<int>{10});
}

TEST_CASE("submit: the files a command needs when the job starts", "[job_env]") {
  auto paths = [](const std::vector<std::string>& command) {
    std::vector<std::string> out;
    for (const auto& f : command_files(command)) {
      out.push_back((f.on_path ? "PATH:" : "") + f.path);
    }
    return out;
  };
  using V = std::vector<std::string>;
  CHECK(paths({"python3", "train.py", "--lr", "1"}) == V{"PATH:python3", "train.py"});
  CHECK(paths({"/venv/bin/python", "-u", "-W", "ignore", "src/t.py"}) == V{"/venv/bin/python", "src/t.py"});
  CHECK(paths({"python3", "-m", "app.train"}) == V{"PATH:python3"});
  CHECK(paths({"python3", "-c", "print(1)"}) == V{"PATH:python3"});
  CHECK(paths({"bash", "run.sh"}) == V{"PATH:bash", "run.sh"});
  CHECK(paths({"./run.sh", "x.py"}) == V{"./run.sh"});
  CHECK(paths({"torchrun", "train.py"}) == V{"PATH:torchrun"});
  CHECK(paths({}).empty());
}

TEST_CASE("submit: scheduler directives from the machine and --sched-arg, one line each", "[job_env]") {
  auto slurm = spec(Scheduler::slurm);
  slurm.sched_args = {"-C gpu", "-q regular"};
  auto script = render_submit_script(slurm);
  REQUIRE(script);
  CHECK_THAT(*script, Catch::Contains("#SBATCH -C gpu\n#SBATCH -q regular\n# written by ezpz submit"));
  slurm.sched_args = {"-C gpu\nrm -rf ~"};
  auto bad = render_submit_script(slurm);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ezpz::ExitCode::usage);
}
