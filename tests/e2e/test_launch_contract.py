"""ezpz launch as a daily driver, under the built-in launcher, Open MPI's mpirun and MPICH's mpiexec
alike: torchrun's whole environment (checked with Debian's real torch), the one failure summary
(an @record main raising, a rank exiting 3 last, a SIGSEGV, a missing command), whole lines and
the first Ctrl-C's notice."""
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from ezpz_e2e import EZPZ, TempDirTest, base_env, main  # noqa: E402

DEBIAN_PYTHON = "/usr/bin/python3"  # Debian's python3-torch lives here
LAUNCHERS = ("local", "mpirun", "mpiexec")

CONTRACT = r'''
import json, os, torch.distributed as dist
keys = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK", "GROUP_WORLD_SIZE",
        "ROLE_NAME", "ROLE_RANK", "ROLE_WORLD_SIZE", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
        "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_ERROR_FILE",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING", "OMP_NUM_THREADS", "MASTER_ADDR", "MASTER_PORT"]
env = {k: os.environ.get(k) for k in keys}
print("CONTRACT " + json.dumps({"elastic": dist.is_torchelastic_launched(), "env": env}), flush=True)
'''

RECORD_RAISES = r'''
import os
from torch.distributed.elastic.multiprocessing.errors import record
def deep():
    raise ValueError("bad batch on rank " + os.environ["RANK"])
@record
def main():
    if os.environ["RANK"] == "1":
        deep()
    import time; time.sleep(30)
main()
'''

# Rank 2 fails last: it waits for the others' markers (written as they end), not a fixed time.
LAST_EXITS_3 = r'''
import os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
if os.environ["RANK"] != "2":
    open(os.path.join(here, "ended-" + os.environ["RANK"]), "w").close()
    sys.exit(0)
deadline = time.monotonic() + 120
while not all(os.path.exists(os.path.join(here, "ended-" + r)) for r in "01") and time.monotonic() < deadline:
    time.sleep(0.02)
sys.exit(3)
'''

SEGV = r'''
import os, resource, signal, time
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core dump to write on a busy machine
if os.environ["RANK"] == "1":
    os.kill(os.getpid(), signal.SIGSEGV)
time.sleep(30)
'''

# Counts SIGUSR1; says how many it got a second after the first (a second delivery would be in).
COUNT_USR1 = r'''
import os, signal, sys, time
count = 0
def on_usr1(signo, frame):
    global count
    count += 1
signal.signal(signal.SIGUSR1, on_usr1)
open(sys.argv[1] + "-" + os.environ["RANK"], "w").close()
deadline = time.time() + 60
while count == 0 and time.time() < deadline:
    time.sleep(0.05)
time.sleep(1.0)
print(f"usr1={count}", flush=True)
'''

LONG_LINES = r'''
import os, sys
line = os.environ["RANK"] * 400
for _ in range(50):
    sys.stdout.write(line)
    sys.stdout.flush()
    sys.stdout.write("\n")
    sys.stdout.flush()
'''


class Contract(TempDirTest):
    def setUp(self):
        super().setUp()
        self.home = os.path.join(self.tmp, "ezpz-home")
        mpich = os.path.join(self.tmp, "mpich", "bin")
        os.makedirs(mpich)
        os.symlink("/usr/bin/mpiexec.mpich", os.path.join(mpich, "mpiexec"))
        os.symlink("/usr/bin/hydra_pmi_proxy", os.path.join(mpich, "hydra_pmi_proxy"))
        self.env = base_env(EZPZ_HOME=self.home, PATH=mpich + ":" + os.environ.get("PATH", "/usr/bin:/bin"))

    def launch(self, launcher, n, script, *extra, env=None, timeout=120):
        path = self.write(f"job-{abs(hash(script))}.py", script)
        return subprocess.run([EZPZ, "launch", "--launcher", launcher, "-n", str(n), *extra, "--", DEBIAN_PYTHON,
                               path], env=env or self.env, capture_output=True, text=True, timeout=timeout)

    def records(self):
        paths = sorted(glob.glob(os.path.join(self.home, "jobs", "*", "launch-*.json")), key=os.path.getmtime)
        return [json.load(open(p)) for p in paths]

    def fresh_home(self):
        shutil.rmtree(self.home, ignore_errors=True)

    def wait_for(self, pattern, count, seconds=60):
        deadline = time.monotonic() + seconds
        while len(glob.glob(pattern)) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(len(glob.glob(pattern)), count, "ranks did not start")

    def summary(self, stderr):
        lines = stderr.splitlines()
        at = [i for i, line in enumerate(lines) if line.startswith("ezpz: error: job failed:")]
        self.assertEqual(len(at), 1, stderr)
        return lines[at[0]:]

    def test_torchrun_contract_on_every_rank(self):
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                proc = self.launch(launcher, 3, CONTRACT, "--retries", "2")
                self.assertEqual(proc.returncode, 0, proc.stderr)
                ranks = [json.loads(line.split(" ", 1)[1]) for line in proc.stdout.splitlines()
                         if line.startswith("CONTRACT ")]
                self.assertEqual(len(ranks), 3, proc.stdout)
                for got in ranks:
                    env, r = got["env"], got["env"]["RANK"]
                    self.assertTrue(got["elastic"], got)
                    self.assertEqual(env["GROUP_RANK"], env["NODE_RANK"])
                    self.assertEqual(env["GROUP_WORLD_SIZE"], "1")
                    self.assertEqual(env["ROLE_NAME"], "default")
                    self.assertEqual(env["ROLE_RANK"], r)
                    self.assertEqual(env["ROLE_WORLD_SIZE"], "3")
                    self.assertTrue(env["TORCHELASTIC_RUN_ID"].startswith("local-"), env)
                    self.assertEqual(env["TORCHELASTIC_RESTART_COUNT"], "0")
                    self.assertEqual(env["TORCHELASTIC_MAX_RESTARTS"], "2")
                    self.assertEqual(env["TORCHELASTIC_USE_AGENT_STORE"], "False")
                    self.assertTrue(env["TORCHELASTIC_ERROR_FILE"].startswith(self.home + "/jobs/"), env)
                    self.assertTrue(env["TORCHELASTIC_ERROR_FILE"].endswith(f"/error-{r}.json"), env)
                    self.assertEqual(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "1")
                    self.assertEqual(env["OMP_NUM_THREADS"], "1")
                self.assertEqual(proc.stderr.count("OMP_NUM_THREADS=1 for every rank"), 1, proc.stderr)
                # A launch that went well leaves its record, and beside it only the ranks' output
                # files (no error file, no failure report, no empty directory).
                dirs = [p for p in glob.glob(os.path.join(self.home, "jobs", "*", "launch-*")) if os.path.isdir(p)]
                for d in dirs:
                    left = [f for f in os.listdir(d) if not re.fullmatch(r"rank-\d+\..+\.(out|err)", f)]
                    self.assertEqual(left, [], d)
                    self.assertTrue(os.listdir(d), d)
        # A value the user exported wins.
        env = dict(self.env, OMP_NUM_THREADS="5", TORCH_NCCL_ASYNC_ERROR_HANDLING="0")
        proc = self.launch("mpirun", 2, CONTRACT, env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("OMP_NUM_THREADS=1", proc.stderr)
        for line in proc.stdout.splitlines():
            if line.startswith("CONTRACT "):
                got = json.loads(line.split(" ", 1)[1])["env"]
                self.assertEqual((got["OMP_NUM_THREADS"], got["TORCH_NCCL_ASYNC_ERROR_HANDLING"]), ("5", "0"))

    def test_dry_run_json_shows_the_whole_set(self):
        proc = subprocess.run([EZPZ, "launch", "--launcher", "mpirun", "-n", "2", "--retries", "1", "--dry-run",
                               "--json", "--", "python3", "t.py"], env=self.env, capture_output=True, text=True,
                              timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        env = json.loads(proc.stdout)["rank0_env"]
        for name in ("RANK", "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_NAME", "ROLE_RANK", "ROLE_WORLD_SIZE",
                     "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_USE_AGENT_STORE",
                     "TORCHELASTIC_ERROR_FILE", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "OMP_NUM_THREADS"):
            self.assertIn(name, env)
        self.assertEqual(env["TORCHELASTIC_MAX_RESTARTS"], "1")
        self.assertFalse(os.path.exists(self.home), "a dry run writes nothing")

    def test_record_main_raising_names_the_exception_and_frames(self):
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                self.fresh_home()
                proc = self.launch(launcher, 3, RECORD_RAISES)
                self.assertEqual(proc.returncode, 1, proc.stderr)
                lines = self.summary(proc.stderr)
                self.assertIn("rank 1 on ", lines[0])
                self.assertIn("failed first: it exited with code 1", lines[0])
                self.assertIn("  ValueError: bad batch on rank 1", lines)
                self.assertTrue(any("in deep" in line for line in lines), lines)
                self.assertTrue(lines[-2].startswith("  (from ") and lines[-2].endswith("/error-1.json)"), lines)
                self.assertTrue(lines[-1].startswith("  full output: ") and lines[-1].endswith(".err"), lines)
                self.assertTrue(os.path.isfile(lines[-1][len("  full output: "):]), lines)
                rec = self.records()[-1]
                self.assertEqual(rec["first_failure"]["rank"], 1)
                self.assertEqual(rec["first_failure"]["error"], "ValueError: bad batch on rank 1")
                self.assertEqual(rec["failed_rank"], 1)

    def test_rank_exiting_3_last(self):
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                self.fresh_home()
                for old in glob.glob(os.path.join(self.tmp, "ended-*")):
                    os.remove(old)
                proc = self.launch(launcher, 3, LAST_EXITS_3)
                self.assertEqual(proc.returncode, 3, proc.stderr)
                lines = self.summary(proc.stderr)
                self.assertIn("rank 2 on ", lines[0])
                self.assertIn("it exited with code 3, ", lines[0])
                self.assertEqual(self.records()[-1]["first_failure"]["exit_code"], 3)

    def test_rank_killed_by_sigsegv(self):
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                self.fresh_home()
                proc = self.launch(launcher, 3, SEGV)
                self.assertNotEqual(proc.returncode, 0, proc.stderr)
                lines = self.summary(proc.stderr)
                self.assertIn("rank 1 on ", lines[0])
                self.assertIn("was killed by signal 11 (SIGSEGV)", lines[0])
                self.assertEqual(self.records()[-1]["first_failure"]["signal"], 11)

    def test_missing_command_said_once(self):
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                proc = subprocess.run([EZPZ, "launch", "--launcher", launcher, "-n", "3", "--", "no-such-prog-xyz"],
                                      env=self.env, capture_output=True, text=True, timeout=60)
                self.assertEqual(proc.returncode, 127, proc.stderr)
                self.assertEqual(proc.stderr.count("no-such-prog-xyz: command not found"), 1, proc.stderr)

    def test_long_lines_stay_whole(self):
        for launcher in ("local",):
            proc = self.launch(launcher, 4, LONG_LINES)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            lines = proc.stdout.splitlines()
            self.assertEqual(len(lines), 200, proc.stdout[:2000])
            for line in lines:
                self.assertEqual(len(line), 400, line[:80])
                self.assertEqual(len(set(line)), 1, line[:80])

    def test_a_forwarded_signal_reaches_each_rank_once(self):
        # The launchers signal each rank's process group (the shim and its command): the shim must
        # not pass the same signal on again (a SIGUSR1 checkpoint handler would run twice).
        for launcher in ("mpiexec", "mpirun"):
            with self.subTest(launcher=launcher):
                marker = os.path.join(self.tmp, f"usr1-{launcher}")
                path = self.write(f"usr1-{launcher}.py", COUNT_USR1)
                proc = subprocess.Popen([EZPZ, "launch", "--launcher", launcher, "-n", "3", "--", DEBIAN_PYTHON,
                                         path, marker], env=self.env, stdout=subprocess.PIPE, text=True)
                self.wait_for(marker + "-*", 3)
                proc.send_signal(signal.SIGUSR1)
                out, _ = proc.communicate(timeout=90)
                self.assertEqual(proc.returncode, 0)
                self.assertEqual(sorted(line for line in out.splitlines() if line.startswith("usr1=")),
                                 ["usr1=1"] * 3, out)

    def test_a_stop_signal_as_the_shim_ends_keeps_the_commands_code(self):
        # The launcher's SIGTERM can reach a shim whose command has just ended with a code: the shim
        # must still end with that code, never of the signal (Hydra takes a rank killed by a signal
        # as its cue to SIGKILL every other rank at once, their output unread). The command ignores
        # SIGTERM; the test, the shim's parent as the launcher is, sends it without pause until the
        # shim is gone.
        command = ("import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                   "print('ready', flush=True); time.sleep(0.3); sys.exit(3)")
        shim = [EZPZ, "__rank-env", "--np=1", "--ppn=1", "--nhosts=1", "--restart=0/0", "--", DEBIAN_PYTHON, "-c",
                command]
        for _ in range(3):
            proc = subprocess.Popen(shim, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.assertEqual(proc.stdout.readline(), b"ready\n")
            sent = 0
            while proc.poll() is None:
                try:
                    os.kill(proc.pid, signal.SIGTERM)
                    sent += 1
                except ProcessLookupError:
                    pass
            err = proc.stderr.read()
            proc.stdout.close()
            proc.stderr.close()
            self.assertGreater(sent, 100, "the shim ended before the stop signals could test it")
            self.assertEqual(proc.returncode, 3, err)

    def test_the_shim_keeps_an_inherited_ignore_and_passes_progress_bars(self):
        # A rank started under nohup keeps ignoring SIGHUP, as it did when the shim exec'd it.
        check = "import signal; print(signal.getsignal(signal.SIGHUP) == signal.SIG_IGN)"
        shim = [EZPZ, "__rank-env", "--np=1", "--ppn=1", "--nhosts=1", "--restart=0/0", "--", DEBIAN_PYTHON, "-c",
                check]
        ignoring = subprocess.run(shim, env=self.env, capture_output=True, text=True, timeout=60,
                                  preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
        self.assertEqual(ignoring.stdout, "True\n", ignoring.stderr)
        plain = subprocess.run(shim, env=self.env, capture_output=True, text=True, timeout=60)
        self.assertEqual(plain.stdout, "False\n", plain.stderr)
        # A bar redrawn with \r passes as it is drawn, each piece labelled; \r\n is one line end.
        proc = subprocess.run([EZPZ, "launch", "--launcher", "local", "--label", "-n", "1", "--", "printf",
                               "10%%\\r50%%\\r100%%\\r\\ndone\\n"], env=self.env, capture_output=True, timeout=60)
        label = b"[%s 0] " % socket.gethostname().encode()
        self.assertEqual(proc.stdout, label + b"10%\r" + label + b"50%\r" + label + b"100%\r\n" + label + b"done\n",
                         proc.stderr)

    def test_first_ctrl_c_says_what_it_sent(self):
        for launcher in ("local", "mpirun"):
            with self.subTest(launcher=launcher):
                marker = os.path.join(self.tmp, f"started-{launcher}")
                script = f"import os, time\nopen('{marker}-' + os.environ['RANK'], 'w').close()\ntime.sleep(60)\n"
                path = self.write(f"sleep-{launcher}.py", script)
                proc = subprocess.Popen([EZPZ, "launch", "--launcher", launcher, "-n", "2", "--kill-after", "20", "--",
                                         DEBIAN_PYTHON, path], env=self.env, stderr=subprocess.PIPE, text=True)
                self.wait_for(marker + "-*", 2)
                proc.send_signal(signal.SIGINT)
                _, err = proc.communicate(timeout=60)
                self.assertEqual(proc.returncode, 130, err)
                # (under mpirun too the ranks get it, each through its shim)
                self.assertIn("SIGINT sent to 2 ranks: waiting up to 20 s for them to stop", err)
                self.assertNotIn("job failed", err)


if __name__ == "__main__":
    main(verbosity=2)
