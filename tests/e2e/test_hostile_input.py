"""Hostile input: paths and commands holding spaces, quotes, $(), backticks, ';', newlines and a
leading '-' never reach a shell unquoted (a canary file proves nothing ran); host names holding
them are refused at the hostfile, before anything starts; a 100,000-line hostfile in bounded time
and memory; absurd environment values give clean errors."""
import hashlib
import json
import os
import shlex
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from ezpz_e2e import EZPZ, TempDirTest, base_env, main, run  # noqa: E402

# A fake mpiexec: logs its argv (JSON, one line a call) and MASTER_ADDR, runs nothing.
FAKE_MPIEXEC = """#!/usr/bin/env python3
import json, os, sys
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps({"argv": sys.argv[1:], "master_addr": os.environ.get("MASTER_ADDR")}) + "\\n")
"""

# A fake ssh: logs its argv, then runs the remote command with sh -c (as sshd would) in a mount
# namespace where FAKESSH_ROOT is that host's own directory: each "node" has its own copy of the
# destination's parent, the head keeps the real one.
FAKE_SSH = """#!/usr/bin/env python3
import hashlib, json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKESSH_LOG"], "a") as f:
    f.write(json.dumps(args) + "\\n")
host, command = args[-2], args[-1]
box = os.path.join(os.environ["FAKESSH_BOXES"], hashlib.sha1(host.encode()).hexdigest()[:12])
os.makedirs(box, exist_ok=True)
os.execvp("unshare", ["unshare", "-m", "--propagation", "private", "sh", "-c",
                      'mount --bind "$1" "$2" && cd / && exec sh -c "$3"', "fakessh", box,
                      os.environ["FAKESSH_ROOT"], command])
"""


def hostile_words():
    """Words that run `touch $CANARY` if any shell ever sees them unquoted (no whitespace or '/'
    inside, so that they survive as one hostfile word and as one path component)."""
    t = "touch${IFS}$CANARY"
    return [f"$({t})", f"`{t}`", f"h;{t}", f"h|{t}", f"h&&{t}", f"-oProxyCommand={t}", "q'x", 'q"x', "h\\x"]


class HostileLaunch(TempDirTest):
    def setUp(self):
        super().setUp()
        self.canary = os.path.join(self.tmp, "CANARY")
        self.bin = os.path.join(self.tmp, "bin")
        self.write("bin/mpiexec", FAKE_MPIEXEC, 0o755)
        self.log = os.path.join(self.tmp, "mpiexec.log")
        self.hosts = ["node1", "x1000c0s0b0n0.example.org", "10.0.0.3"]
        self.nodefile = self.write("nodefile", "".join(h + "\n" for h in self.hosts))
        self.command = ["python3", "-c", "print('a b')", "$(touch $CANARY)", "`touch $CANARY`", "a;touch $CANARY", "-n", "line1\nline2", "it's", 'say "hi"', "", " lead", "*"]

    def env(self, **extra):
        values = dict(PBS_JOBID="1.pbs", PBS_NODEFILE=self.nodefile, EZPZ_MACHINE="polaris", FAKE_LOG=self.log,
                      CANARY=self.canary, PATH=self.bin + ":" + os.environ.get("PATH", "/usr/bin:/bin"))
        values.update(extra)
        return base_env(**values)

    def calls(self):
        with open(self.log) as f:
            return [json.loads(line) for line in f]

    def test_dry_run_json_and_text_keep_every_word(self):
        env = self.env()
        p = json.loads(run(["launch", "--dry-run", "--json", "--no-rank-env", "--", *self.command], env, check=0).stdout)
        self.assertEqual(p["hosts"], self.hosts)
        self.assertEqual(p["argv"][-len(self.command):], self.command)
        text = run(["launch", "--dry-run", "--no-rank-env", "--", *self.command], env, check=0).stdout.strip()
        self.assertEqual(shlex.split(text)[-len(self.command):], self.command)
        # The printed line, pasted into a shell, runs exactly that argv and nothing else.
        subprocess.run(["sh", "-c", text], env=env, check=True, timeout=30)
        self.assertFalse(os.path.exists(self.canary), "a shell ran part of the dry-run line")
        self.assertEqual(self.calls()[0]["argv"], p["argv"][1:])

    def test_launch_passes_words_and_hosts_as_data(self):
        proc = run(["launch", "--", *self.command], self.env())
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertFalse(os.path.exists(self.canary), "a shell ran part of the launch")
        (call,) = self.calls()
        self.assertEqual(call["argv"][-len(self.command):], self.command)
        self.assertIn(f"--hostfile={self.nodefile}", call["argv"])

    def test_hostile_host_names_are_refused_before_anything_runs(self):
        for word in hostile_words():
            with self.subTest(word=word):
                nodefile = self.write("hostile", f"node1\n{word} slots=4\n")
                for args in (["launch", "--", "true"], ["launch", "--dry-run", "--json", "--", "true"]):
                    proc = run(args, self.env(PBS_NODEFILE=nodefile))
                    self.assertEqual(proc.returncode, 2, proc.stderr)
                    self.assertIn(f"hostfile {nodefile} line 2: ", proc.stderr)
                self.assertFalse(os.path.exists(self.log), "the launcher ran with a hostile host name")
                self.assertFalse(os.path.exists(self.canary))

    def test_hostfile_path_with_hostile_characters(self):
        odd = self.write("d $(touch $CANARY) `touch $CANARY`;'q\"\n-n/hosts", "node1\nnode2\n")
        env = self.env(PBS_NODEFILE=odd)
        p = json.loads(run(["launch", "--dry-run", "--json", "--", "true"], env, check=0).stdout)
        self.assertEqual(p["hostfile"], odd)
        self.assertIn(f"--hostfile={odd}", p["argv"])
        proc = run(["launch", "--", "true"], env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(f"--hostfile={odd}", self.calls()[0]["argv"])
        self.assertFalse(os.path.exists(self.canary))


class HugeHostfile(TempDirTest):
    N = 100_000

    def measure(self, args, env):
        """Run ezpz; (exit code, stdout, stderr, seconds, its own peak RSS in MiB)."""
        with open(os.path.join(self.tmp, "out"), "w+") as out, open(os.path.join(self.tmp, "err"), "w+") as err:
            start = time.monotonic()
            proc = subprocess.Popen([EZPZ, *args], env=env, stdout=out, stderr=err)
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, for rusage
            seconds = time.monotonic() - start
            out.seek(0)
            err.seek(0)
            rss = usage.ru_maxrss / 1024
            print(f"ezpz {' '.join(args[:2])}: {seconds:.2f} s, peak RSS {rss:.0f} MiB", file=sys.stderr)
            return proc.returncode, out.read(), err.read(), seconds, rss

    def test_launch_and_yeet_dry_run_with_100000_hosts(self):
        hosts = [f"x{i // 1000:04d}c0s{i % 1000:03d}b0n0.hostmgmt.cm.example" for i in range(self.N)]
        path = self.write("big", "".join(h + " slots=4 # comment\n" for h in hosts))
        env = base_env(PBS_JOBID="1.pbs", PBS_NODEFILE=path, EZPZ_MACHINE="aurora")
        rc, out, err, seconds, rss = self.measure(["launch", "--dry-run", "--json", "--", "true"], env)
        self.assertEqual(rc, 0, err)
        p = json.loads(out)
        self.assertEqual(len(p["hosts"]), self.N)
        self.assertEqual(p["nprocs"], self.N * 12)
        self.assertLess(seconds, 30)
        self.assertLess(rss, 1024)
        src = os.path.join(self.tmp, "src")
        os.makedirs(src)
        rc, out, err, seconds, rss = self.measure(
            ["yeet", src, "--dst", os.path.join(self.tmp, "dst"), "--hostfile", path, "--no-hsn", "--dry-run",
             "--json"], env)
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(json.loads(out)["nodes"]), self.N + 1)  # this host too
        self.assertLess(seconds, 30)
        self.assertLess(rss, 1024)


class AbsurdEnvironment(TempDirTest):
    VALUES = ["99999999999999999999999", "-1", "0", "abc", "1e9", "0x10", " 4", "4 ", "%s%n%x", "\u00e9", "9" * 5000,
              "2147483648", "-2147483649"]

    def check_clean(self, args, env, what):
        start = time.monotonic()
        proc = subprocess.run([EZPZ, *args], env=env, capture_output=True, text=True, timeout=60)
        self.assertLess(time.monotonic() - start, 20, what)
        self.assertIn(proc.returncode, (0, 1, 2), f"{what}: exit {proc.returncode}\n{proc.stderr}")
        for bad in ("terminate called", "Sanitizer", "internal error", "Assertion", "what():"):
            self.assertNotIn(bad, proc.stderr, what)
        if proc.returncode != 0:
            self.assertTrue(proc.stderr.strip(), f"{what}: failed without a message")
        return proc

    def test_scheduler_counts(self):
        nodefile = self.write("nodes", "a\nb\n")
        for name in ("PBS_NUM_NODES", "PBS_NP", "PBS_NUM_PPN", "NGPU_PER_HOST", "SLURM_NNODES", "SLURM_NTASKS",
                     "SLURM_NTASKS_PER_NODE", "SLURM_GPUS_ON_NODE", "EZPZ_LOG_LEVEL", "COLUMNS", "OMP_NUM_THREADS",
                     "SLURM_CPUS_PER_TASK", "SLURM_JOB_NUM_NODES"):
            for value in self.VALUES:
                pbs = base_env(PBS_JOBID="1.pbs", PBS_NODEFILE=nodefile, **{name: value})
                self.check_clean(["launch", "--dry-run", "--json", "--", "true"], pbs, f"PBS {name}={value!r}")
                slurm = base_env(SLURM_JOB_ID="7", SLURM_NODELIST="nid[001-002]", **{name: value})
                self.check_clean(["launch", "--dry-run", "--json", "--", "true"], slurm, f"Slurm {name}={value!r}")

    def test_host_sources(self):
        for nodelist in ("nid[0-99999999999999999999]", "nid[1-", "[", "]", "a[]", "n[0-999999],m[0-999999]", "," * 10000,
                         "a" * 100000, "nid[001-003]" * 2000):
            self.check_clean(["launch", "--dry-run", "--", "true"], base_env(SLURM_JOB_ID="7", SLURM_NODELIST=nodelist),
                             f"SLURM_NODELIST={nodelist[:40]!r}")
        # A million zero-padded 5000-character names would take 5 GB: refused up front.
        proc = self.check_clean(["launch", "--dry-run", "--", "true"],
                                base_env(SLURM_JOB_ID="7", SLURM_NODELIST="a[" + "0" * 5000 + "-999999]"), "padding")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("longer than 255 characters", proc.stderr)
        empty = self.write("empty", "")
        os.mkfifo(os.path.join(self.tmp, "fifo"))
        for path in ("/nonexistent/x", self.tmp, empty, "/dev/null", "", "-"):
            proc = self.check_clean(["launch", "--dry-run", "--", "true"], base_env(PBS_JOBID="1", PBS_NODEFILE=path),
                                    f"PBS_NODEFILE={path!r}")
            if path not in ("", "-"):
                self.assertNotEqual(proc.returncode, 0, f"PBS_NODEFILE={path!r} should be refused")

    def test_config_and_machine(self):
        for value in ("/nonexistent.toml", self.tmp, self.write("bad.toml", "[[machine]]\nname = 3\n"),
                      self.write("bin.toml", "\x00\x01\x02[[["), self.write("header.toml", "[[,\n")):
            self.check_clean(["launch", "--dry-run", "--", "true"], base_env(EZPZ_CONFIG=value), f"EZPZ_CONFIG={value}")
        for value in ("nope", "", "a" * 100000, "../../etc/passwd"):
            self.check_clean(["launch", "--dry-run", "--", "true"], base_env(EZPZ_MACHINE=value), f"EZPZ_MACHINE")


class HostileYeet(TempDirTest):
    """Needs root (as the cluster tests): each fake node gets its own mount namespace."""

    def test_hosts_and_destination_never_reach_a_shell(self):
        canary = os.path.join(self.tmp, "CANARY")
        root = os.path.join(self.tmp, "root")
        boxes = os.path.join(self.tmp, "boxes")
        os.makedirs(root)
        self.write("bin/fakessh", FAKE_SSH, 0o755)
        self.write("src/payload.txt", "payload\n")
        self.write("src/sub/b.txt", "b\n")
        hosts = ["plain", "dash-in-middle", "n1.example.org", "10.0.0.9"]
        hostfile = self.write("hosts", "".join(h + "\n" for h in hosts))
        log = os.path.join(self.tmp, "ssh.log")
        name = "d $(touch $CANARY) `touch $CANARY`;x'q\"-n\nz"
        dst = os.path.join(root, name)
        env = base_env(FAKESSH_LOG=log, FAKESSH_ROOT=root, FAKESSH_BOXES=boxes, EZPZ_MACHINE="local", CANARY=canary)
        # Host names that a shell would run are refused at the hostfile: ssh is never started.
        hostile = self.write("hostile", "".join(h + "\n" for h in hostile_words()))
        proc = subprocess.run([EZPZ, "yeet", os.path.join(self.tmp, "src"), "--dst", dst, "--hostfile", hostile,
                               "--no-hsn", "--ssh-command", os.path.join(self.tmp, "bin/fakessh")], env=env,
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn(f"hostfile {hostile} line 1: ", proc.stderr)
        self.assertFalse(os.path.exists(log), "ssh was started with a hostile host name")
        self.assertFalse(os.path.exists(dst))
        proc = subprocess.run([EZPZ, "yeet", os.path.join(self.tmp, "src"), "--dst", dst, "--hostfile", hostfile,
                               "--no-hsn", "--fanout", "2", "--ssh-command", os.path.join(self.tmp, "bin/fakessh"),
                               "--json"], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertFalse(os.path.exists(canary), "a shell ran part of a host name or the destination")
        report = json.loads(proc.stdout)
        self.assertEqual(sorted(n["host"] for n in report["remote"] if n["ok"]), sorted(hosts))
        with open(log) as f:
            calls = [json.loads(line) for line in f]
        self.assertEqual(sorted(c[-2] for c in calls), sorted(hosts))  # each host reached once, as one word
        for h in hosts:
            box = os.path.join(boxes, hashlib.sha1(h.encode()).hexdigest()[:12])
            with open(os.path.join(box, name, "payload.txt")) as f:
                self.assertEqual(f.read(), "payload\n", h)
            # The copy and its spare for the next update (docs/yeet.md), named as quoted as the copy.
            self.assertEqual(sorted(os.listdir(box)), sorted([name, name + ".ezpz-spare"]),
                             f"{h}: leftovers beside the destination")

    def test_host_with_a_leading_dash_is_never_an_ssh_option(self):
        canary = os.path.join(self.tmp, "CANARY")
        self.write("bin/fakessh", FAKE_SSH, 0o755)
        self.write("src/payload.txt", "payload\n")
        hostfile = self.write("hosts", "-oProxyCommand=touch${IFS}$CANARY\n")
        log = os.path.join(self.tmp, "ssh.log")
        env = base_env(FAKESSH_LOG=log, FAKESSH_ROOT=self.tmp, FAKESSH_BOXES=os.path.join(self.tmp, "boxes"),
                       CANARY=canary)
        proc = subprocess.run([EZPZ, "yeet", os.path.join(self.tmp, "src"), "--dst", os.path.join(self.tmp, "dst"),
                               "--hostfile", hostfile, "--no-hsn", "--ssh-command",
                               os.path.join(self.tmp, "bin/fakessh")], env=env, capture_output=True, text=True,
                              timeout=60)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("-oProxyCommand", proc.stderr)
        self.assertFalse(os.path.exists(log), "ssh was started with a host name that it would read as an option")
        self.assertFalse(os.path.exists(canary))

    def test_relay_never_hands_ssh_a_child_with_a_leading_dash(self):
        # A relay's --children come from its parent: the relay itself refuses such a child too.
        canary = os.path.join(self.tmp, "CANARY")
        self.write("bin/fakessh", FAKE_SSH, 0o755)
        log = os.path.join(self.tmp, "ssh.log")
        env = base_env(FAKESSH_LOG=log, FAKESSH_ROOT=self.tmp, FAKESSH_BOXES=os.path.join(self.tmp, "boxes"),
                       CANARY=canary)
        proc = subprocess.run([EZPZ, "__yeet-relay", "--host", "n0", "--children", "-oProxyCommand=touch${IFS}$CANARY",
                               "--dst", os.path.join(self.tmp, "dst"), "--ssh-command",
                               os.path.join(self.tmp, "bin/fakessh")], env=env, input="", capture_output=True,
                              text=True, timeout=60)
        results = {r["host"]: r for r in map(json.loads, proc.stdout.splitlines()[1:])}
        self.assertIn("starts with '-'", results["-oProxyCommand=touch${IFS}$CANARY"]["error"])
        self.assertFalse(os.path.exists(log), "ssh was started with a host name that it would read as an option")
        self.assertFalse(os.path.exists(canary))


if __name__ == "__main__":
    main()
