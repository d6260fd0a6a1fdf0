"""Hostfiles are host names, and --json speaks also on failure (issue 17, parts 10 and 11).

A hostfile line that is not a host name (binary bytes, a Slurm range, an ssh option, a label or a
name too long, a stray word) is a usage error in launch, yeet, doctor and kill alike: exit 2, one
line on stderr naming the file and the line, nothing on stdout (with --json: one JSON object), no
file created. Every --json command prints exactly one JSON object when it fails, with the exit
code it has without --json."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from ezpz_e2e import EZPZ, TempDirTest, base_env, main, run  # noqa: E402

# (what, hostfile text, the line the error names, a piece of the message)
BAD_HOSTFILES = [
    ("binary", "node1\n\x7fELF\x02\x01\x01\x00\x00\x00\n", 2, "is not a host name"),
    ("slurm range", "# nodes\nnode[1-\n", 2, "'node[1-'"),
    ("ssh option", "-oProxyCommand=touch${IFS}x\n", 1, "starts with '-'"),
    ("long label", "a" * 64 + "\n", 1, "longer than 63"),
    ("long name", ".".join(["a" * 63] * 4) + "\n", 1, "longer than 253"),
    ("stray word", "node1\nnode2 node3\n", 2, "'node3'"),
    ("bare count", "node1\r\n:8\r\n", 2, "is empty"),
    ("shell syntax", "$(touch x)\n", 1, "holds '$'"),
]


def tree(root):
    """Every path under `root` (the files a command may have created)."""
    out = set()
    for d, dirs, files in os.walk(root):
        for name in dirs + files:
            out.add(os.path.relpath(os.path.join(d, name), root))
    return out


def error_lines(stderr):
    return [line[len("ezpz: error: "):] for line in stderr.splitlines() if line.startswith("ezpz: error: ")]


class Case(TempDirTest):
    def setUp(self):
        super().setUp()
        self.write("src/payload.txt", "payload\n")
        self.src = os.path.join(self.tmp, "src")
        self.dst = os.path.join(self.tmp, "dst")
        self.home = os.path.join(self.tmp, "home")
        os.makedirs(self.home)

    def env(self, **extra):
        return base_env(HOME=self.home, EZPZ_HOME=os.path.join(self.home, "ezpz"), EZPZ_MACHINE="local", **extra)

    def ezpz(self, args, env):
        # (doctor keeps its answers from the python in EZPZ_HOME/cache, whatever else it found:
        # they hold for the next doctor; nothing else may appear)
        kept = {"home/ezpz", "home/ezpz/cache", "home/ezpz/cache/python-torch.json", "home/ezpz/cache/python-wandb.json"}
        before = tree(self.tmp)
        proc = subprocess.run([EZPZ, *args], env=env, capture_output=True, text=True, errors="replace", timeout=60)
        after = tree(self.tmp)
        self.assertEqual((after - before) - (kept if args[0] == "doctor" else set()), set(),
                         f"ezpz {args[0]} created files")
        self.assertEqual(before - after, set(), f"ezpz {args[0]} removed files")
        return proc

    def failure_object(self, proc, command, rc):
        """stdout holds exactly one JSON object, the failure's; returns it."""
        lines = proc.stdout.splitlines()
        self.assertEqual(len(lines), 1, proc.stdout)
        obj = json.loads(lines[0])
        self.assertIsInstance(obj, dict)
        self.assertIs(obj["ok"], False)
        self.assertEqual(obj["command"], command)
        self.assertEqual(obj["exit_code"], rc)
        self.assertTrue(obj["error"])
        self.assertNotIn("\x1b", lines[0])
        errors = error_lines(proc.stderr)
        if errors:  # the same text as on stderr
            self.assertEqual(obj["error"], errors[0])
            self.assertEqual(obj["errors"], errors)
        return obj


class BadHostfiles(Case):
    """Each of the four commands, with --hostfile and with PBS_NODEFILE, text and --json."""

    def commands(self, hostfile):
        """(command, argv, env): each reads `hostfile`."""
        pbs = dict(PBS_JOBID="1.pbs", PBS_NODEFILE=hostfile)
        return [
            ("launch", ["launch", "--hostfile", hostfile, "--", "true"], self.env()),
            ("launch", ["launch", "--dry-run", "--", "true"], self.env(**pbs)),
            ("yeet", ["yeet", self.src, "--dst", self.dst, "--hostfile", hostfile, "--no-hsn"], self.env()),
            ("yeet", ["yeet", self.src, "--dst", self.dst, "--no-hsn"], self.env(**pbs)),
            ("doctor", ["doctor", "--hostfile", hostfile], self.env(WANDB_MODE="offline")),
            ("doctor", ["doctor"], self.env(WANDB_MODE="offline", **pbs)),
            ("kill", ["kill", "--all-nodes", "--hostfile", hostfile, "no-such-job-17"], self.env()),
            ("kill", ["kill", "--all-nodes", "no-such-job-17"], self.env(**pbs)),
        ]

    def test_every_command_refuses_a_line_that_is_not_a_host_name(self):
        for what, text, line, piece in BAD_HOSTFILES:
            hostfile = os.path.join(self.tmp, "hosts-" + what.replace(" ", "-"))
            with open(hostfile, "w", newline="") as f:
                f.write(text)
            for command, args, env in self.commands(hostfile):
                with self.subTest(hostfile=what, args=args):
                    proc = self.ezpz(args, env)
                    self.assertEqual(proc.returncode, 2, proc.stderr)
                    self.assertEqual(proc.stdout, "")
                    lines = proc.stderr.splitlines()
                    self.assertEqual(len(lines), 1, proc.stderr)
                    self.assertTrue(lines[0].startswith(f"ezpz: error: hostfile {hostfile} line {line}: "), lines[0])
                    self.assertIn(piece, lines[0])
                    self.assertIn("one host name per line", lines[0])
                    self.assertNotIn("\x1b", lines[0])
                    # --json: the same line on stderr, the object on stdout.
                    jproc = self.ezpz([args[0], "--json", *args[1:]] if command != "launch" else
                                      [args[0], "--dry-run", "--json", *[a for a in args[1:] if a != "--dry-run"]],
                                      env)
                    self.assertEqual(jproc.returncode, 2, jproc.stderr)
                    self.assertEqual(jproc.stderr, proc.stderr)
                    obj = self.failure_object(jproc, command, 2)
                    self.assertEqual(obj["error"], lines[0][len("ezpz: error: "):])

    def test_good_hostfiles_still_work(self):
        hostfile = self.write("hosts", "# the job\r\nx1000c0s0b0n0.example.org:4\r\n\r\n10.0.0.2 slots=4 max_slots=8\n")
        p = json.loads(run(["launch", "--dry-run", "--json", "--hostfile", hostfile, "--", "true"], self.env(),
                           check=0).stdout)
        self.assertEqual(p["hosts"], ["x1000c0s0b0n0.example.org", "10.0.0.2"])
        self.assertIs(p["ok"], True)

    def test_an_empty_hostfile_names_the_file(self):
        hostfile = self.write("empty", "# nothing\n\n")
        proc = self.ezpz(["launch", "--dry-run", "--hostfile", hostfile, "--", "true"], self.env())
        self.assertEqual(proc.returncode, 2)
        self.assertIn(hostfile, proc.stderr)
        self.assertEqual(len(proc.stderr.splitlines()), 1)

    def test_slurm_nodelist_names_are_host_names_too(self):
        proc = self.ezpz(["launch", "--dry-run", "--", "true"], self.env(SLURM_JOB_ID="7", SLURM_NODELIST="n[1-2],a;b"))
        self.assertEqual(proc.returncode, 2)
        self.assertIn("'a;b' is not a host name", proc.stderr)


class JsonOnFailure(Case):
    """One refusal per --json command: stdout is exactly one object, ok false, the same exit code."""

    def refusals(self):
        venv = os.path.join(self.tmp, "venv")
        os.makedirs(os.path.join(venv, "bin"))
        bad_archive = self.write("bad.tar.gz", "this is not a gzip stream\n" * 100)
        no_hosts = self.write("nohosts", "\n")
        return [
            # (command, argv without --json, env, what the object says is unchanged)
            ("launch", ["launch", "--dry-run", "--launcher", "nope", "--", "x"], self.env(), []),
            ("launch", ["launch", "--dry-run", "--hostfile", no_hosts, "--", "x"], self.env(), []),
            ("launch", ["launch", "--dry-run", "-n", "two", "--", "x"], self.env(), []),  # CLI11's own error
            ("doctor", ["doctor", "--timeout", "0"], self.env(), []),
            ("doctor", ["doctor", "--hostfile", os.path.join(self.tmp, "missing")], self.env(), None),
            ("yeet", ["yeet", os.path.join(self.tmp, "missing"), "--dst", self.dst], self.env(), []),
            ("yeet", ["yeet", bad_archive, "--dst", self.dst], self.env(), [self.dst]),
            ("yeet", ["yeet", self.src, "--dst", self.dst, "--fanout", "0"], self.env(), []),
            ("kill", ["kill", "--signal", "STOP"], self.env(), []),
            ("env", ["env", "--hostfile", os.path.join(self.tmp, "missing")], self.env(), []),
            ("tar-env", ["tar-env", os.path.join(self.tmp, "missing")], self.env(), []),
            ("tar-env", ["tar-env", venv, "-o", os.path.join(venv, "x.tar.zst")], self.env(),
             [os.path.join(venv, "x.tar.zst")]),
            ("tar-env", ["tar-env", venv, "--format", "rar"], self.env(), []),
            ("test", ["test", "--program", os.path.join(self.tmp, "missing")], self.env(), []),
        ]

    def test_each_refusal_prints_one_object(self):
        for command, args, env, unchanged in self.refusals():
            with self.subTest(args=args):
                plain = self.ezpz(args, env)
                self.assertNotEqual(plain.returncode, 0, plain.stderr)
                if unchanged is None:  # doctor's checks failed: its report, not a failure object
                    self.assertEqual(plain.returncode, 1)
                    out = self.ezpz([command, "--json", *args[1:]], env)
                    self.assertGreater(json.loads(out.stdout)["summary"]["failed"], 0)
                    continue
                jproc = self.ezpz([command, "--json", *args[1:]], env)
                self.assertEqual(jproc.returncode, plain.returncode, jproc.stderr)
                obj = self.failure_object(jproc, command, plain.returncode)
                self.assertEqual(obj["unchanged"], unchanged)
                self.assertEqual(jproc.stderr, plain.stderr)

    def test_a_refused_archive_leaves_the_destination(self):
        os.makedirs(self.dst)
        self.write("dst/old.txt", "old\n")
        bad = self.write("bad.tar.gz", "\x1f\x8b garbage")
        proc = self.ezpz(["yeet", bad, "--dst", self.dst, "--json"], self.env())
        self.assertEqual(proc.returncode, 1, proc.stderr)
        obj = self.failure_object(proc, "yeet", 1)
        self.assertEqual(obj["unchanged"], [self.dst])
        with open(os.path.join(self.dst, "old.txt")) as f:
            self.assertEqual(f.read(), "old\n")

    def test_no_colour_in_the_object_on_a_terminal(self):
        env = self.env(TERM="xterm")
        cmd = f"{EZPZ} kill --json --signal STOP"
        out = subprocess.run(["script", "-qec", cmd, "/dev/null"], env=env, capture_output=True, text=True,
                             timeout=30).stdout
        self.assertIn("\x1b[", out)  # stderr's tag is coloured on a terminal...
        (line,) = [line for line in out.splitlines() if line.startswith("{")]
        obj = json.loads(line)  # ...the object is not
        self.assertNotIn("\x1b", line)
        self.assertIn("--signal STOP", obj["error"])

    def test_success_objects_say_ok(self):
        p = json.loads(run(["launch", "--dry-run", "--json", "--", "true"], self.env(), check=0).stdout)
        self.assertIs(p["ok"], True)
        y = json.loads(run(["yeet", self.src, "--dst", self.dst, "--dry-run", "--json"], self.env(), check=0).stdout)
        self.assertIs(y["ok"], True)
        y = json.loads(run(["yeet", self.src, "--dst", self.dst, "--json"], self.env(), check=0).stdout)
        self.assertIs(y["ok"], True)
        venv = os.path.join(self.tmp, "venv2")
        os.makedirs(os.path.join(venv, "bin"))
        t = json.loads(run(["tar-env", venv, "-o", os.path.join(self.tmp, "v.tar.zst"), "--json"], self.env(),
                           check=0).stdout)
        self.assertIs(t["ok"], True)
        # doctor's array and kill's per-node lines keep their format.
        self.assertIsInstance(json.loads(run(["doctor", "--json"], self.env(WANDB_MODE="offline")).stdout)["checks"], list)
        k = json.loads(run(["kill", "--json", "no-such-job-17"], self.env(), check=1).stdout)
        self.assertNotIn("ok", k)


if __name__ == "__main__":
    main(verbosity=2)
