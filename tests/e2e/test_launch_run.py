"""ezpz launch runs real jobs: the built-in launcher, Open MPI's mpirun and MPICH's mpiexec,
the torchrun rank environment, exit codes, signals, the watchdog, retries and records."""
import glob
import json
import os
import signal
import socket
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from ezpz_e2e import (EZPZ, SOURCE_DIR, TempDirTest, base_env, main, mpich_env, run, wait_for_line,  # noqa: E402
                      wait_until)

DEBIAN_PYTHON = "/usr/bin/python3"  # Debian's python3-torch lives here
GLOO = os.path.join(SOURCE_DIR, "tests", "data", "gloo_allreduce.py")
SHOW = ('echo "rank=$RANK world=$WORLD_SIZE local=$LOCAL_RANK lws=$LOCAL_WORLD_SIZE node=$NODE_RANK '
        'addr=$MASTER_ADDR port=$MASTER_PORT"')


def ranks(stdout):
    """{rank: {field: value}} from SHOW lines."""
    out = {}
    for line in stdout.splitlines():
        if "rank=" not in line:
            continue
        fields = dict(kv.split("=", 1) for kv in line[line.index("rank="):].split())
        out[int(fields["rank"])] = fields
    return out


def count(pattern):
    """Processes whose command line starts with `pattern` (not ezpz or mpirun naming it)."""
    return len(subprocess.run(["pgrep", "-f", "^" + pattern], capture_output=True, text=True).stdout.split())


class Launch(TempDirTest):
    def setUp(self):
        super().setUp()
        self.env = base_env(EZPZ_HOME=os.path.join(self.tmp, "ezpz-home"))
        self.mpich_env = mpich_env(self.tmp, self.env)

    def check_ranks(self, stdout, n):
        got = ranks(stdout)
        self.assertEqual(sorted(got), list(range(n)), stdout)
        ports = {r["port"] for r in got.values()}
        self.assertEqual(len(ports), 1)
        self.assertTrue(ports.pop().isdigit())
        for r, f in got.items():
            self.assertEqual(f["world"], str(n))
            self.assertEqual(f["local"], str(r))
            self.assertEqual(f["lws"], str(n))
            self.assertEqual(f["node"], "0")

    def test_local_launcher_four_ranks(self):
        proc = run(["launch", "--launcher", "local", "-n", "4", "--", "sh", "-c", SHOW], self.env, check=0)
        self.check_ranks(proc.stdout, 4)
        self.assertEqual({r["addr"] for r in ranks(proc.stdout).values()}, {"127.0.0.1"})

    def test_openmpi_four_ranks_through_the_shim(self):
        env = dict(self.env, RANK="99", WORLD_SIZE="99")  # stale values must not leak into ranks
        proc = run(["launch", "--launcher", "mpirun", "-n", "4", "--", "sh", "-c", SHOW], env, check=0)
        self.check_ranks(proc.stdout, 4)

    def test_mpich_three_ranks_through_the_shim(self):
        # Debian 12's MPICH hydra mpiexec itself dies of SIGPIPE, losing its ranks' output, in up
        # to a third of runs of short jobs on a loaded machine (no ezpz involved: `mpiexec.mpich -n 3
        # sh -c 'echo x'` beside two CPU burners, 67 of 300). ezpz reports it as the launcher's
        # exit; this test is about the ranks' environment, so it tries up to 3 times past that.
        for _ in range(3):
            proc = run(["launch", "--launcher", "mpiexec", "-n", "3", "--", "sh", "-c", SHOW], self.mpich_env)
            if not (proc.returncode == 141 and "mpiexec exited with code 141" in proc.stderr):
                break
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.check_ranks(proc.stdout, 3)

    def test_no_rank_env(self):
        proc = run(["launch", "--launcher", "local", "--no-rank-env", "-n", "2", "--", "sh", "-c",
                    'echo "rank=${RANK:-none}"'], self.env, check=0)
        self.assertEqual(proc.stdout.split(), ["rank=none", "rank=none"])

    def test_exit_code_of_the_failing_rank(self):
        job = ["sh", "-c", '[ "$RANK" = 2 ] && exit 7; sleep 300']
        start = time.monotonic()
        proc = run(["launch", "--launcher", "local", "-n", "4", "--", *job], self.env, check=7)
        self.assertLess(time.monotonic() - start, 60)  # the others were stopped, not waited for
        self.assertIn("rank 2 on", proc.stderr)
        self.assertIn("exited with code 7", proc.stderr)
        run(["launch", "--launcher", "mpirun", "-n", "4", "--", "sh", "-c", '[ "$RANK" = 2 ] && exit 7; exit 0'],
            self.env, check=7)
        run(["launch", "--launcher", "mpiexec", "-n", "3", "--", "sh", "-c", '[ "$RANK" = 1 ] && exit 7; exit 0'],
            self.mpich_env, check=7)

    def test_a_launcher_dead_of_sigpipe_after_a_rank_failed_gives_the_rank_code(self):
        # MPICH's hydra mpiexec dies of SIGPIPE now and then (1 run in 7 here) once a rank has
        # failed and its proxies exit: a stand-in that always does, after running the ranks.
        fake = self.write("fakempi/mpiexec", """#!/usr/bin/env python3
import os, signal, subprocess, sys
args = sys.argv[1:]
n = int(args[args.index("-n") + 1])
command = args[args.index("-ppn") + 2:]
ranks = [subprocess.Popen(command, env=dict(os.environ, PMI_RANK=str(r), PMI_SIZE=str(n))) for r in range(n)]
for p in ranks:
    p.wait()
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
os.kill(os.getpid(), signal.SIGPIPE)
""", 0o755)
        env = dict(self.env, PATH=os.path.dirname(fake) + ":" + self.env["PATH"])
        # --keep-going: ezpz does not stop the job at rank 1's failure, so the launcher's own death
        # comes after it (without it, ezpz stops mpiexec first: the same code, said differently).
        proc = run(["launch", "--launcher", "mpiexec", "--keep-going", "-n", "3", "--", "sh", "-c",
                    '[ "$RANK" = 1 ] && exit 7; exit 0'], env, check=7)
        self.assertIn("rank 1 on", proc.stderr)
        self.assertIn("mpiexec itself was then killed by signal 13 (SIGPIPE): ezpz exits with rank 1's code, 7",
                      proc.stderr)
        proc = run(["launch", "--launcher", "mpiexec", "-n", "3", "--", "sh", "-c",
                    '[ "$RANK" = 1 ] && exit 7; sleep 2; exit 0'], env, check=7)
        self.assertIn("rank 1 on", proc.stderr)
        # No rank failed: every rank's work is done, the launcher died in its teardown: a success, said.
        proc = run(["launch", "--launcher", "mpiexec", "-n", "2", "--", "true"], env, check=0)
        self.assertIn("every rank ended with code 0, then mpiexec exited with code 141 (in its teardown): the job "
                      "succeeded", proc.stderr)

    def test_keep_going_waits_for_the_others(self):
        proc = run(["launch", "--launcher", "local", "--keep-going", "-n", "3", "--", "sh", "-c",
                    '[ "$RANK" = 0 ] && exit 5; sleep 0.3; echo done $RANK'], self.env, check=5)
        self.assertEqual(sorted(proc.stdout.split()), ["1", "2", "done", "done"])

    def sigterm_leaves_nothing(self, launcher, env):
        marker = f"sleep 4{os.getpid() % 1000}.{launcher[-1] == 'l' and 1 or 2}"
        proc = subprocess.Popen([EZPZ, "launch", "--launcher", launcher, "-n", "3", "--", "sh", "-c",
                                 f"exec {marker}"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertTrue(wait_until(lambda: count(marker) == 3), "ranks did not start")
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=15)
        deadline = time.monotonic() + 30
        while count(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(count(marker), 0, f"ranks outlived ezpz launch --launcher {launcher}")
        self.assertEqual(rc, 143)

    def test_sigterm_local(self):
        self.sigterm_leaves_nothing("local", self.env)

    def test_sigterm_openmpi(self):
        self.sigterm_leaves_nothing("mpirun", self.env)

    def test_sigkill_of_ezpz_takes_the_local_ranks_with_it(self):
        marker = f"sleep 5{os.getpid() % 1000}.3"
        proc = subprocess.Popen([EZPZ, "launch", "--launcher", "local", "-n", "2", "--", "sh", "-c",
                                 f"exec {marker}"], env=self.env)
        self.assertTrue(wait_until(lambda: count(marker) == 2), "ranks did not start")
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 30
        while count(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(count(marker), 0)

    def test_second_sigint_kills(self):
        proc = subprocess.Popen([EZPZ, "launch", "--launcher", "local", "--kill-after", "60", "-n", "2", "--",
                                 "sh", "-c", "trap '' INT; echo ready; sleep 30"], env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2):
            proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        # The second is sent once ezpz has handled the first (it says so), not after a fixed delay:
        # two signals pending at once are one.
        wait_for_line(proc.stderr, "SIGINT sent to")
        self.assertIsNone(proc.poll(), "one SIGINT the job ignores must not end it")
        proc.send_signal(signal.SIGINT)
        self.assertEqual(proc.wait(timeout=30), 130)

    def test_kill_after_escalates(self):
        proc = subprocess.Popen([EZPZ, "launch", "--launcher", "local", "--kill-after", "0.5", "-n", "1", "--",
                                 "sh", "-c", "trap '' TERM; echo ready; sleep 300"], env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        proc.stdout.readline()
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(timeout=60), 143)
        self.assertLess(time.monotonic() - start, 30)  # escalated: the rank itself would take 300 s

    def test_usr1_is_forwarded(self):
        proc = subprocess.Popen([EZPZ, "launch", "--launcher", "local", "-n", "2", "--", "sh", "-c",
                                 "trap 'echo got-usr1; exit 0' USR1; echo ready; while :; do sleep 0.05; done"],
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2):
            proc.stdout.readline()
        proc.send_signal(signal.SIGUSR1)
        out, _ = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(out.split().count("got-usr1"), 2)

    def test_timeout_returns_124(self):
        start = time.monotonic()
        proc = run(["launch", "--launcher", "local", "--timeout", "1", "-n", "2", "--", "sh", "-c",
                    "echo hi; sleep 300"], self.env, check=124)
        self.assertLess(time.monotonic() - start, 60)
        self.assertIn("no output for 1 s: stopping the job (--idle-timeout)", proc.stderr)
        run(["launch", "--launcher", "mpirun", "--idle-timeout", "1", "-n", "2", "--", "sleep", "300"], self.env,
            check=124)

    def test_time_limit_returns_124(self):
        # A job that keeps talking: the idle timeout never fires, the wall-clock limit does.
        start = time.monotonic()
        proc = run(["launch", "--launcher", "local", "--idle-timeout", "30", "--time-limit", "1", "-n", "2", "--",
                    "sh", "-c", "while true; do echo x; sleep 0.1; done"], self.env, check=124)
        self.assertLess(time.monotonic() - start, 60)
        self.assertIn("ran for 1 s: stopping the job (--time-limit)", proc.stderr)
        run(["launch", "--launcher", "mpirun", "--time-limit", "1", "-n", "2", "--", "sleep", "300"], self.env,
            check=124)

    def test_label_and_raw_bytes(self):
        script = "printf 'a\\377b\\n'; printf 'err\\n' >&2"
        host = socket.gethostname().encode()
        want_out = sorted(b"[%s %d] a\xffb" % (host, r) for r in range(2))
        want_err = sorted(b"[%s %d] err" % (host, r) for r in range(2))
        proc = subprocess.run([EZPZ, "launch", "--launcher", "local", "--label", "-n", "2", "--", "sh", "-c", script],
                              env=self.env, capture_output=True, timeout=30)
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(sorted(proc.stdout.split(b"\n")[:-1]), want_out)
        ours = [line for line in proc.stderr.split(b"\n")[:-1] if not line.startswith(b"ezpz: ")]
        self.assertEqual(sorted(ours), want_err)
        # The same prefix under an MPI launcher: the rank hub labels its lines.
        proc = subprocess.run([EZPZ, "launch", "--launcher", "mpirun", "--label", "-n", "2", "--", "sh", "-c", script],
                              env=self.env, capture_output=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(proc.stdout.split(b"\n")[:-1]), want_out)
        self.assertIn(want_err[1], proc.stderr.split(b"\n"))

    def test_retries_then_success_and_the_record(self):
        counter = os.path.join(self.tmp, "attempts")
        job = f'n=$(cat {counter} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {counter}; [ $n -ge 2 ]'
        proc = run(["launch", "--launcher", "local", "--retries", "3", "--retry-delay", "0", "-n", "1", "--",
                    "sh", "-c", job], self.env, check=0)
        self.assertIn("attempt 1 of 4 ended with code 1", proc.stderr)
        records = glob.glob(os.path.join(self.env["EZPZ_HOME"], "jobs", "local-*", "launch-*.json"))
        self.assertEqual(len(records), 1)
        rec = json.load(open(records[0]))
        self.assertEqual(rec["exit_code"], 0)
        self.assertEqual(rec["attempts"], 2)
        self.assertEqual(rec["plan"]["launcher"], "local")
        self.assertEqual(rec["command"], ["sh", "-c", job])
        self.assertGreaterEqual(rec["duration_s"], 0)
        for key in ("start", "end", "ezpz_version"):
            self.assertIn(key, rec)

    def test_records_pruned_and_none_when_asked(self):
        # The newest N records are kept (with their directories; an emptied job folder goes too).
        env = dict(self.env, EZPZ_KEEP_RECORDS="2")
        jobs = os.path.join(self.env["EZPZ_HOME"], "jobs")
        for k in range(4):
            run(["launch", "--launcher", "local", "-n", "1", "--", "sh", "-c", f"exit {k}"], env, check=k)
            time.sleep(1.05)  # records are named by the second
        records = sorted(glob.glob(os.path.join(jobs, "local-*", "launch-*.json")))
        self.assertEqual(len(records), 2, records)
        self.assertEqual([json.load(open(r))["exit_code"] for r in records], [2, 3])
        self.assertEqual(len(os.listdir(jobs)), 2)  # the two emptied job folders are gone
        # --no-record and EZPZ_NO_RECORD: nothing written at all.
        home = os.path.join(self.tmp, "fresh-home")
        for extra, flags in (({}, ["--no-record"]), ({"EZPZ_NO_RECORD": "1"}, [])):
            run(["launch", "--launcher", "local", *flags, "-n", "1", "--", "true"],
                dict(self.env, EZPZ_HOME=home, **extra), check=0)
            self.assertFalse(os.path.exists(home))
        self.assertIn("EZPZ_NO_RECORD", run(["launch", "--help"], self.env, check=0).stdout)

    def test_unwritable_home_is_only_a_warning(self):
        blocker = self.write("not-a-dir", "")
        env = dict(self.env, EZPZ_HOME=blocker)
        proc = run(["launch", "--launcher", "local", "-n", "1", "--", "sh", "-c", "exit 3"], env, check=3)
        self.assertIn("job record not saved", proc.stderr)

    def test_print_env(self):
        env = base_env(PBS_JOBID="1.x", PBS_NODEFILE=self.write("nodes", "x3001c0s1b0n0\nx3001c0s1b1n0\n"),
                       EZPZ_MACHINE="polaris")
        proc = run(["launch", "--print-env", "--gpu-bind", "auto", "--", "true"], env, check=0)
        lines = proc.stdout.splitlines()
        self.assertEqual(len(lines), 8)
        self.assertTrue(lines[5].startswith("rank 5 on x3001c0s1b1n0: RANK=5 WORLD_SIZE=8 LOCAL_RANK=1 "
                                            "LOCAL_WORLD_SIZE=4 NODE_RANK=1 MASTER_ADDR=x3001c0s1b0n0 MASTER_PORT="),
                        lines[5])
        self.assertTrue(lines[5].endswith("CUDA_VISIBLE_DEVICES=2"), lines[5])  # Polaris: reversed
        data = json.loads(run(["launch", "--print-env", "--json", "--", "true"], env, check=0).stdout)
        self.assertEqual(data[7]["env"]["RANK"], "7")
        self.assertEqual(data[7]["host"], "x3001c0s1b1n0")


class Torch(TempDirTest):
    """A plain torch.distributed script with init_method='env://' and gloo, no ezpz import."""

    @classmethod
    def setUpClass(cls):
        # Never skipped: scripts/install-deps.sh installs python3-torch, and without it these fail.
        ok = os.path.exists(DEBIAN_PYTHON) and subprocess.run(
            [DEBIAN_PYTHON, "-c", "import torch.distributed"], capture_output=True).returncode == 0
        if not ok:
            raise AssertionError(f"{DEBIAN_PYTHON} cannot import torch.distributed: run scripts/install-deps.sh "
                                 "(python3-torch)")

    def gloo(self, launcher, n=4):
        proc = run(["launch", "--launcher", launcher, "-n", str(n), "--", DEBIAN_PYTHON, GLOO],
                   base_env(EZPZ_HOME=self.tmp), check=0)
        self.assertEqual(proc.stdout.count(" OK"), n, proc.stdout + proc.stderr)

    def test_gloo_allreduce_local(self):
        self.gloo("local")

    def test_gloo_allreduce_mpirun(self):
        self.gloo("mpirun")

    def test_two_jobs_at_once(self):
        procs = [subprocess.Popen([EZPZ, "launch", "--launcher", "local", "-n", "2", "--", DEBIAN_PYTHON, GLOO],
                                  env=base_env(EZPZ_HOME=self.tmp), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        for p in procs:
            out, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, out + err)
            self.assertEqual(out.count(" OK"), 2)


if __name__ == "__main__":
    main(verbosity=2)
