"""ezpz launch's rank output under every launcher (built-in, Open MPI's mpirun, MPICH's mpiexec, the
last two through each rank's shim and the rank hub): whole lines, labels, per-rank files,
--console-ranks, a failed rank's last words, the hang report, and no orphans after a stop."""
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(__file__))
from ezpz_e2e import EZPZ, TempDirTest, base_env, main, mpich_env, run, wait_until  # noqa: E402

HOST = socket.gethostname()
HOSTB = HOST.encode()
LAUNCHERS = ("local", "mpirun", "mpiexec")
PY = sys.executable
BIG = 100_000  # lines per rank in the line-integrity runs, about 190 bytes each
KILL_AFTER = 2
X = "x" * 170

# Each rank prints BIG lines "RANK I xxx...": unbuffered, Python writes every piece apart.
BIG_JOB = f'import os\nr = os.environ["RANK"]\nx = "{X}"\nfor i in range({BIG}):\n    print(r, i, x)\n'
# Ignores SIGINT and SIGTERM, says so, then loops: only SIGKILL ends it.
STUBBORN = """import os, signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)
print("ready", os.environ["RANK"], flush=True)
while True:
    time.sleep(0.05)
"""

# Rank 0 dies of SIGTERM; the others take a second in their handler, then say so and end well.
GRACEFUL = """import os, signal, sys, time
def saved(signo, frame):
    time.sleep(1)
    print("saved", os.environ["RANK"], flush=True)
    sys.exit(0)
if os.environ["RANK"] != "0":
    signal.signal(signal.SIGTERM, saved)
signal.signal(signal.SIGINT, signal.SIG_IGN)
print("ready", os.environ["RANK"], flush=True)
while True:
    time.sleep(0.05)
"""


def label(rank):
    return f"[{HOST} {rank}] ".encode()


def split_lines(data):
    """The lines of `data` (bytes), which must end with a newline when not empty."""
    assert data == b"" or data.endswith(b"\n"), f"output does not end with a newline: {data[-200:]!r}"
    return data.split(b"\n")[:-1]


def rank_err_lines(stderr):
    """stderr's lines less ezpz's own (ezpz: warning: ...)."""
    return [line for line in split_lines(stderr) if not line.startswith(b"ezpz:")]


def matching(marker):
    """`pid command line` of every process whose command line names `marker`."""
    out = subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.strip()]


class Job:
    """ezpz launch started with Popen, both pipes read into lists of lines by threads."""

    def __init__(self, argv, env):
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.out, self.err = [], []
        self.threads = [threading.Thread(target=self._read, args=(s, d), daemon=True)
                        for s, d in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for t in self.threads:
            t.start()

    @staticmethod
    def _read(stream, lines):
        for line in stream:
            lines.append(line)

    def count(self, needle):
        return sum(needle in line for line in list(self.out))

    def wait(self, seconds):
        rc = self.proc.wait(timeout=seconds)
        for t in self.threads:
            t.join(timeout=30)
        self.proc.stdout.close()
        self.proc.stderr.close()
        return rc

    def stop(self):
        """Cleanup: SIGKILL ezpz if still running (a failed test), then reap it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.wait(60)

    def text(self):
        return (b"stdout: " + b"".join(self.out) + b"\nstderr: " + b"".join(self.err)).decode(errors="replace")


class Output(TempDirTest):
    def setUp(self):
        super().setUp()
        self.homes = 0
        self.jobs = []
        self.env = base_env(EZPZ_HOME=os.path.join(self.tmp, "ezpz-home"))
        self.mpich_env = mpich_env(self.tmp, self.env)

    def tearDown(self):
        for job in self.jobs:
            job.stop()
        super().tearDown()

    def env_for(self, launcher, **extra):
        """The launcher's environment with a fresh EZPZ_HOME (self.home), in this test's temp dir."""
        self.homes += 1
        self.home = os.path.join(self.tmp, f"ezpz-home-{self.homes}")
        return dict(self.mpich_env if launcher == "mpiexec" else self.env, EZPZ_HOME=self.home, **extra)

    def launch(self, launcher, args, command, timeout=120, fresh=(), **extra_env):
        """ezpz launch, bytes out. Debian 12's MPICH mpiexec dies of SIGPIPE on its own now and then
        in short jobs (see test_launch_run.py): up to 3 tries past that, each with fresh files (a new
        EZPZ_HOME, the --log-dir removed, each directory in `fresh` emptied)."""
        argv = [EZPZ, "launch", "--launcher", launcher, *args, "--", *command]
        for _ in range(3 if launcher == "mpiexec" else 1):
            env = self.env_for(launcher, **extra_env)
            if "--log-dir" in args:
                shutil.rmtree(args[args.index("--log-dir") + 1], ignore_errors=True)
            for d in fresh:
                shutil.rmtree(d, ignore_errors=True)
                os.makedirs(d)
            proc = subprocess.run(argv, env=env, capture_output=True, timeout=timeout)
            if not (proc.returncode == 141 and b"mpiexec exited with code 141" in proc.stderr):
                break
        return proc

    def check(self, proc, code):
        self.assertEqual(proc.returncode, code, f"{proc.args}\nstdout: {proc.stdout[-3000:]!r}\n"
                                                f"stderr: {proc.stderr[-3000:]!r}")
        # Every shim reached the hub (one that could not would write through the launcher).
        self.assertNotIn(b"cannot reach the launch's rank hub", proc.stderr)

    def rank_files(self, where=None):
        """{file name: bytes} of the rank-R.HOST.out/.err files of the last launch's record (or `where`)."""
        pattern = os.path.join(where, "rank-*") if where else os.path.join(self.home, "jobs", "*", "launch-*",
                                                                           "rank-*")
        found = {}
        for path in glob.glob(pattern):
            with open(path, "rb") as f:
                found[os.path.basename(path)] = f.read()
        return found

    def record(self):
        records = glob.glob(os.path.join(self.home, "jobs", "*", "launch-*.json"))
        self.assertEqual(len(records), 1, records)
        with open(records[0]) as f:
            return json.load(f)

    # Whole lines ---------------------------------------------------------------------------------

    def check_big(self, proc, labelled, n=2):
        """Every stdout line whole, each rank's BIG lines in order, and the rank files byte-exact."""
        self.check(proc, 0)
        pat = re.compile((rb"\[" + re.escape(HOSTB) + rb" (\d+)\] " if labelled else rb"()") +
                         rb"(\d+) (\d+) " + X.encode())
        following, bad = [0] * n, []
        for line in split_lines(proc.stdout):
            m = pat.fullmatch(line)
            ok = m and int(m[2]) < n and (not labelled or m[1] == m[2]) and int(m[3]) == following[int(m[2])]
            if not ok:
                bad.append(line)
                continue
            following[int(m[2])] += 1
        self.assertEqual(len(bad), 0, f"{len(bad)} bad lines, the first: {bad[:3]!r}")
        self.assertEqual(following, [BIG] * n)
        self.assertEqual(rank_err_lines(proc.stderr), [])
        files = self.rank_files()
        self.assertEqual(sorted(files), [f"rank-{r}.{HOST}.out" for r in range(n)])
        for r in range(n):
            want = "".join(f"{r} {i} {X}\n" for i in range(BIG)).encode()
            self.assertTrue(files[f"rank-{r}.{HOST}.out"] == want, f"rank {r}'s file differs from what it wrote")

    def big(self, launcher, labelled):
        args = ["-n", "2"] + (["--label"] if labelled else [])
        proc = self.launch(launcher, args, [PY, "-c", BIG_JOB], timeout=550, PYTHONUNBUFFERED="1")
        self.check_big(proc, labelled)

    def test_whole_lines_mpirun_unbuffered(self):
        self.big("mpirun", labelled=False)

    def test_whole_lines_mpirun_labelled(self):
        self.big("mpirun", labelled=True)

    def test_whole_lines_mpiexec_labelled(self):
        self.big("mpiexec", labelled=True)

    def test_whole_lines_local_labelled(self):
        self.big("local", labelled=True)

    def test_eight_ranks_one_line_each(self):
        job = 'import os; r = os.environ["RANK"]; print("eight", r, r * 300)'
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                proc = self.launch(launcher, ["--label", "-n", "8"], [PY, "-c", job], PYTHONUNBUFFERED="1")
                self.check(proc, 0)
                want = sorted(label(r) + f"eight {r} {str(r) * 300}".encode() for r in range(8))
                self.assertEqual(sorted(split_lines(proc.stdout)), want)

    def test_stderr_kept_apart(self):
        job = ('import os, sys; r = os.environ["RANK"]\nfor i in range(200):\n'
               '    print("OUT-MARK", r, i)\n    print("ERR-MARK", r, i, file=sys.stderr)\n')
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                proc = self.launch(launcher, ["-n", "2"], [PY, "-c", job], PYTHONUNBUFFERED="1")
                self.check(proc, 0)
                for lines, tag in ((split_lines(proc.stdout), "OUT"), (rank_err_lines(proc.stderr), "ERR")):
                    want = sorted(f"{tag}-MARK {r} {i}".encode() for r in range(2) for i in range(200))
                    self.assertEqual(sorted(lines), want, f"{tag} lines")

    def test_unterminated_last_line_is_ended(self):
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                proc = self.launch(launcher, ["-n", "2"], ["printf", "partial"])
                self.check(proc, 0)
                self.assertEqual(proc.stdout, b"partial\npartial\n")
                files = self.rank_files()
                self.assertEqual(files, {f"rank-{r}.{HOST}.out": b"partial" for r in range(2)})  # as written

    def test_carriage_return_progress_lines(self):
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                proc = self.launch(launcher, ["--label", "-n", "2"], ["printf", r"p10\rp20\rdone\n"])
                self.check(proc, 0)
                pieces = re.findall(rb"([^\r\n]*)([\r\n])", proc.stdout)
                self.assertEqual(b"".join(a + b for a, b in pieces), proc.stdout)
                for r in range(2):
                    mine = [(a, b) for a, b in pieces if a.startswith(label(r))]
                    self.assertEqual(mine, [(label(r) + b"p10", b"\r"), (label(r) + b"p20", b"\r"),
                                            (label(r) + b"done", b"\n")], proc.stdout)
                self.assertEqual(len(pieces), 6, proc.stdout)
                for r in range(2):
                    self.assertEqual(self.rank_files()[f"rank-{r}.{HOST}.out"], b"p10\rp20\rdone\n")

    def test_one_megabyte_line(self):
        job = 'import os; r = int(os.environ["RANK"]); print("ab"[r] * 1_000_000)'
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                proc = self.launch(launcher, ["--label", "-n", "2"], [PY, "-c", job], PYTHONUNBUFFERED="1")
                self.check(proc, 0)
                got = sorted(split_lines(proc.stdout))
                self.assertEqual([len(line) for line in got], [len(label(0)) + 1_000_000] * 2)
                self.assertTrue(got == [label(0) + b"a" * 1_000_000, label(1) + b"b" * 1_000_000],
                                f"cut or glued: {[line[:40] + b'...' + line[-40:] for line in got]}")
                files = self.rank_files()
                self.assertTrue(files[f"rank-1.{HOST}.out"] == b"b" * 1_000_000 + b"\n")

    def test_label_prefix_and_bare_lines(self):
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                proc = self.launch(launcher, ["--label", "-n", "3"], ["echo", "hello"])
                self.check(proc, 0)
                self.assertEqual(sorted(split_lines(proc.stdout)), [label(r) + b"hello" for r in range(3)])
                proc = self.launch(launcher, ["-n", "3"], ["echo", "hello"])
                self.check(proc, 0)
                self.assertEqual(proc.stdout, b"hello\n" * 3)

    # Per-rank files ------------------------------------------------------------------------------

    def test_rank_files_in_the_record(self):
        # Rank 0 writes no stderr: it gets no .err file. Raw bytes, and no label in the files.
        job = "printf 'a\\377b\\n'; [ \"$RANK\" = 1 ] && printf 'e1\\n' >&2; exit 0"
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                proc = self.launch(launcher, ["--label", "-n", "2"], ["sh", "-c", job])
                self.check(proc, 0)
                self.assertEqual(self.rank_files(), {f"rank-0.{HOST}.out": b"a\xffb\n",
                                                     f"rank-1.{HOST}.out": b"a\xffb\n",
                                                     f"rank-1.{HOST}.err": b"e1\n"})
                proc = self.launch(launcher, ["--no-record", "-n", "2"], ["sh", "-c", job])
                self.check(proc, 0)
                self.assertFalse(os.path.exists(self.home), "--no-record wrote files")

    def test_log_dir_with_retries(self):
        # Each rank counts its attempts; every attempt fails, once both ranks have written (the first
        # to fail stops the other). The launch writes to DIR/launch-TIME-PID (DIR/latest), attempt k > 0
        # to retry-k in it.
        job = ('c=$COUNTERS/c$RANK; n=$(cat $c 2>/dev/null || echo 0); echo $((n+1)) > $c; '
               'echo try-$n; echo err-$n >&2; touch $COUNTERS/done-$n-$RANK; '
               'until [ -e $COUNTERS/done-$n-0 ] && [ -e $COUNTERS/done-$n-1 ]; do sleep 0.05; done; exit 3')
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                logs = os.path.join(self.tmp, f"logs-{launcher}")
                counters = os.path.join(self.tmp, f"counters-{launcher}")
                proc = self.launch(launcher, ["--no-record", "--log-dir", logs, "--retries", "1", "--retry-delay",
                                              "0", "-n", "2"], ["sh", "-c", job], fresh=[counters], COUNTERS=counters)
                self.check(proc, 3)
                own = os.path.join(logs, os.readlink(os.path.join(logs, "latest")))  # this launch's directory
                self.assertEqual(os.path.dirname(own), logs)
                for k, where in ((0, own), (1, os.path.join(own, "retry-1"))):
                    want = {}
                    for r in range(2):
                        want[f"rank-{r}.{HOST}.out"] = f"try-{k}\n".encode()
                        want[f"rank-{r}.{HOST}.err"] = f"err-{k}\n".encode()
                    self.assertEqual(self.rank_files(where), want, f"attempt {k}")
                self.assertFalse(os.path.exists(self.home), "--no-record wrote a record")

    # --console-ranks -----------------------------------------------------------------------------

    def test_console_ranks(self):
        job = 'echo "out-$RANK"; echo "err-$RANK" >&2'
        cases = (("--console-ranks", "1", [1]), ("--console-ranks", "0,2", [0, 2]),
                 ("--console-ranks", "0-1", [0, 1]), ("--local-ranks-filter", "2", [2]))
        for launcher in LAUNCHERS:
            for flag, spec, shown in cases:
                with self.subTest(launcher=launcher, flag=flag, spec=spec):
                    proc = self.launch(launcher, [flag, spec, "-n", "3"], ["sh", "-c", job])
                    self.check(proc, 0)
                    self.assertEqual(sorted(split_lines(proc.stdout)), [f"out-{r}".encode() for r in shown])
                    self.assertEqual(sorted(rank_err_lines(proc.stderr)), [f"err-{r}".encode() for r in shown])
                    want = {}
                    for r in range(3):
                        want[f"rank-{r}.{HOST}.out"] = f"out-{r}\n".encode()
                        want[f"rank-{r}.{HOST}.err"] = f"err-{r}\n".encode()
                    self.assertEqual(self.rank_files(), want)

    def test_hidden_ranks_output_keeps_the_watchdog_quiet(self):
        # Rank 1 is not on the console: only its last line reaches ezpz, and that still counts
        # as output for --idle-timeout.
        job = ('import os, time\nfor i in range(14):\n    if os.environ["RANK"] == "1":\n'
               '        print("tick", i, flush=True)\n    time.sleep(0.5)\n')
        for launcher in ("mpirun", "mpiexec"):
            with self.subTest(launcher=launcher):
                proc = self.launch(launcher, ["-n", "2", "--console-ranks", "0", "--idle-timeout", "5"],
                                   [PY, "-c", job])
                self.check(proc, 0)
                self.assertEqual(proc.stdout, b"")
                files = self.rank_files()
                self.assertEqual(files[f"rank-1.{HOST}.out"].count(b"tick"), 14)

    def test_console_ranks_bad_list_is_a_usage_error(self):
        proc = run(["launch", "--launcher", "local", "--console-ranks", "x", "-n", "2", "--", "true"],
                   base_env(EZPZ_HOME=os.path.join(self.tmp, "home")), check=2)
        self.assertIn("--console-ranks", proc.stderr)

    # A failed rank's last words ------------------------------------------------------------------

    def last_words(self, body, what, last_line, code=None):
        """Rank 1 runs `body` (Python) once rank 0 is running, and fails first; rank 0 ends (code 0)
        only once rank 1 is gone (mpiexec does not stop it). ezpz names rank 1 and its last lines on
        stderr, and the record keeps them."""
        job = ('import os, sys, signal, time\nw = os.environ["WHERE"]\n'
               'def put(name, text):\n    open(w + "/" + name + ".tmp", "w").write(text)\n'
               '    os.rename(w + "/" + name + ".tmp", w + "/" + name)\n'
               'if os.environ["RANK"] == "0":\n    put("r0", "")\n'
               '    while not os.path.exists(w + "/r1") or os.path.exists("/proc/" + open(w + "/r1").read()):\n'
               '        time.sleep(0.05)\n    sys.exit(0)\n'
               'while not os.path.exists(w + "/r0"):\n    time.sleep(0.05)\nput("r1", str(os.getpid()))\n' + body)
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                where = os.path.join(self.tmp, f"words-{launcher}")
                proc = self.launch(launcher, ["-n", "2"], [PY, "-c", job], fresh=[where], WHERE=where)
                self.assertNotEqual(proc.returncode, 0)
                if code is not None:
                    self.check(proc, code)
                err = proc.stderr.decode(errors="replace")
                m = re.search(rf"^ezpz: error: job failed: rank 1 on {re.escape(HOST)} failed first: "
                              rf"it {re.escape(what)}(?!\d).*\n  its last (\d+) lines? on stderr:\n"
                              rf"((?:  \[{re.escape(HOST)} 1\] .*\n)+)", err, re.M)
                self.assertIsNotNone(m, err)
                said = [line[len(f"  [{HOST} 1] "):] for line in m[2].splitlines()]
                self.assertEqual(len(said), int(m[1]), err)
                self.assertEqual(said[-1], last_line, err)
                self.assertIn("last-words-marker", said, err)
                rec = self.record()
                self.assertEqual(rec["first_failure"]["last_lines"], said)
                self.assertEqual(rec["rank_hosts"], [[HOST, HOST]])

    def test_last_words_of_an_exception(self):
        self.last_words('print("last-words-marker", file=sys.stderr)\nraise RuntimeError("boom-marker")',
                        "exited with code 1", "RuntimeError: boom-marker", code=1)

    def test_last_words_of_a_missing_module(self):
        self.last_words('print("last-words-marker", file=sys.stderr)\nimport nosuchmodule_xyz',
                        "exited with code 1", "ModuleNotFoundError: No module named 'nosuchmodule_xyz'", code=1)

    def test_last_words_of_a_segfault(self):
        self.last_words('print("last-words-marker", file=sys.stderr, flush=True)\n'
                        'os.kill(os.getpid(), signal.SIGSEGV)',
                        "was killed by signal 11 (SIGSEGV)", "last-words-marker")

    def test_a_rank_done_early_is_no_failure(self):
        # Rank 0 exits 0 at once; rank 1 goes on until rank 0's process is gone (reaped), then ends.
        job = ('import os, time\npidfile = os.path.join(os.environ["WHERE"], "rank0.pid")\n'
               'if os.environ["RANK"] == "0":\n    open(pidfile + ".tmp", "w").write(str(os.getpid()))\n'
               '    os.rename(pidfile + ".tmp", pidfile)\n    raise SystemExit(0)\n'
               'while not os.path.exists(pidfile) or os.path.exists("/proc/" + open(pidfile).read()):\n'
               '    time.sleep(0.05)\ntime.sleep(0.5)\nprint("late-rank-done", flush=True)\n')
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                where = os.path.join(self.tmp, f"early-{launcher}")
                proc = self.launch(launcher, ["-n", "2"], [PY, "-c", job], fresh=[where], WHERE=where)
                self.check(proc, 0)
                self.assertEqual(proc.stdout, b"late-rank-done\n")
                self.assertNotIn(b"job failed", proc.stderr)

    def test_a_failing_rank_stops_the_job_under_every_launcher(self):
        # MPICH's mpiexec (and srun) would wait for rank 0 for ever: ezpz stops the job, with rank 1's code.
        job = 'import os, sys, time\nif os.environ["RANK"] == "1":\n    sys.exit(7)\ntime.sleep(300)\n'
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                started = time.monotonic()
                proc = self.launch(launcher, ["-n", "2", "--kill-after", "2"], [PY, "-c", job])
                self.check(proc, 7)
                self.assertLess(time.monotonic() - started, 100)  # the rank sleeps 300 s
                self.assertRegex(proc.stderr, rb"rank 1 on \S+ exited with code 7: stopping ")
                self.assertRegex(proc.stderr, rb"job failed: rank 1 on \S+ failed first: it exited with code 7")

    def test_keep_going_is_ignored_by_mpirun(self):
        proc = self.launch("mpirun", ["--keep-going", "-n", "2"], ["true"])
        self.check(proc, 0)
        self.assertIn(b"--keep-going is ignored by mpirun", proc.stderr)

    # The hang report -----------------------------------------------------------------------------

    def test_hang_report_names_the_quiet_ranks(self):
        job = 'import os, time; print("quiet-marker", os.environ["RANK"], flush=True); time.sleep(600)'
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                proc = self.launch(launcher, ["--idle-timeout", "3", "-n", "2"], [PY, "-c", job])
                self.check(proc, 124)
                err = proc.stderr.decode(errors="replace")
                for r in range(2):
                    self.assertRegex(err, rf"(?m)^ezpz: warning:   rank {r} on {re.escape(HOST)}: quiet for \d+ s; "
                                          rf"last line: quiet-marker {r}$")

    def test_hang_report_after_the_others_ended(self):
        job = ('import os, time\nif os.environ["RANK"] != "2":\n    raise SystemExit(0)\n'
               'print("still-here-marker", flush=True)\ntime.sleep(600)\n')
        proc = self.launch("local", ["--idle-timeout", "3", "-n", "3"], [PY, "-c", job])
        self.check(proc, 124)
        err = proc.stderr.decode(errors="replace")
        self.assertRegex(err, r"(?m)^ezpz: warning: 2 ranks ended with code 0, the last \d+ s ago; "
                              r"still running: 1 rank$")
        self.assertRegex(err, rf"(?m)^ezpz: warning:   rank 2 on {re.escape(HOST)}: quiet for \d+ s; "
                              rf"last line: still-here-marker$")
        self.assertNotRegex(err, r"(?m)^ezpz: warning:   rank [01]\b")

    # No orphans ----------------------------------------------------------------------------------

    def stubborn(self, launcher, extra=(), n=3, program=STUBBORN, kill_after=KILL_AFTER):
        """Ranks that ignore SIGINT and SIGTERM (or run `program`), running and ready: (job, marker)."""
        marker = f"stubborn-{uuid.uuid4().hex}"
        script = self.write(f"{marker}.py", program)
        argv = [EZPZ, "launch", "--launcher", launcher, "--kill-after", str(kill_after), *extra, "-n", str(n),
                "--", PY, script]
        for _ in range(3 if launcher == "mpiexec" else 1):
            job = Job(argv, self.env_for(launcher))
            self.jobs.append(job)
            wait_until(lambda: job.count(b"ready") == n or job.proc.poll() is not None)
            if job.count(b"ready") == n or job.proc.poll() != 141:
                break
        self.assertEqual(job.count(b"ready"), n, job.text())
        # Ready means each rank's handlers are set; its shim (if any) and python are all running.
        self.assertGreaterEqual(len(matching(marker)), n, matching(marker))
        return job, marker

    def gone(self, marker, since, job):
        """Nothing naming `marker` left KILL_AFTER + 2 s after `since`."""
        deadline = since + KILL_AFTER + 2
        wait_until(lambda: not matching(marker), seconds=max(0.0, deadline - time.monotonic()), step=0.1)
        left = matching(marker)
        if left:
            for line in left:  # clean up after a failure: by pid, only what this test started
                try:
                    os.kill(int(line.split()[0]), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.assertEqual(left, [], f"left running {KILL_AFTER + 2} s later\n{job.text()}")

    def test_no_orphans_after_the_time_limit(self):
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                job, marker = self.stubborn(launcher, ["--time-limit", "3"], n=2)
                self.assertEqual(job.wait(120), 124, job.text())
                self.gone(marker, time.monotonic(), job)

    def test_no_orphans_after_the_idle_timeout(self):
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                job, marker = self.stubborn(launcher, ["--idle-timeout", "3"], n=2)
                self.assertEqual(job.wait(120), 124, job.text())
                self.gone(marker, time.monotonic(), job)

    def test_no_orphans_after_sigterm(self):
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                job, marker = self.stubborn(launcher)
                since = time.monotonic()
                job.proc.send_signal(signal.SIGTERM)
                self.gone(marker, since, job)
                self.assertEqual(job.wait(60), 143, job.text())

    def test_a_stop_leaves_each_rank_its_term_handler(self):
        # Rank 0 dies of the SIGTERM at once; ranks 1 and 2 take a second in their handler (a
        # checkpoint saved). Under MPICH's Hydra a rank killed by a signal was its cue to SIGKILL the
        # others at once; Open MPI's mpirun, stopped, SIGKILLs its ranks within milliseconds (and
        # all of them once one ends): ezpz stops them through their shims. ezpz promises each
        # --kill-after.
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                job, _ = self.stubborn(launcher, program=GRACEFUL, kill_after=30)
                job.proc.send_signal(signal.SIGTERM)
                self.assertEqual(job.wait(60), 143, job.text())
                self.assertEqual(sorted(line for line in job.out if line.startswith(b"saved")),
                                 [b"saved 1\n", b"saved 2\n"], job.text())
        # The time limit's stop under mpirun takes the same road (ranks stopped through their shims).
        job, _ = self.stubborn("mpirun", extra=("--time-limit", "8"), program=GRACEFUL, kill_after=30)
        self.assertEqual(job.wait(60), 124, job.text())
        self.assertEqual(sorted(line for line in job.out if line.startswith(b"saved")),
                         [b"saved 1\n", b"saved 2\n"], job.text())

    def test_no_orphans_after_sigkill_of_ezpz(self):
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                job, marker = self.stubborn(launcher)
                since = time.monotonic()
                job.proc.kill()
                job.wait(30)
                self.gone(marker, since, job)

    def test_no_orphans_after_a_double_sigint(self):
        for launcher in LAUNCHERS:
            with self.subTest(launcher=launcher):
                job, marker = self.stubborn(launcher)
                job.proc.send_signal(signal.SIGINT)
                # The second once ezpz has handled the first (it says so): two pending at once are one.
                self.assertTrue(wait_until(lambda: any(b"SIGINT sent to" in line for line in list(job.err))),
                                job.text())
                since = time.monotonic()
                job.proc.send_signal(signal.SIGINT)
                self.gone(marker, since, job)
                self.assertEqual(job.wait(60), 130, job.text())


if __name__ == "__main__":
    main(verbosity=2)
