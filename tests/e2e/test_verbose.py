"""-v in the commands that reach other nodes: yeet says its plan's decisions and every node's
steps (the relays' lines reach the head's terminal, each named by its node), doctor each check's
verdict and time, kill what it signals; without -v none of it. And in the others: env, submit,
tar-env and test say what they found and what they do."""
import os
import re
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from ezpz_e2e import EZPZ, TempDirTest, base_env, main  # noqa: E402

# A fake ssh: runs the remote command with sh -c (as sshd would) in a mount namespace where
# FAKESSH_ROOT is that host's own directory (each "node" has its own destination).
FAKE_SSH = """#!/usr/bin/env python3
import hashlib, os, sys
host, command = sys.argv[-2], sys.argv[-1]
box = os.path.join(os.environ["FAKESSH_BOXES"], hashlib.sha1(host.encode()).hexdigest()[:12])
os.makedirs(box, exist_ok=True)
os.execvp("unshare", ["unshare", "-m", "--propagation", "private", "sh", "-c",
                      'mount --bind "$1" "$2" && cd / && exec sh -c "$3"', "fakessh", box,
                      os.environ["FAKESSH_ROOT"], command])
"""

HOSTS = ["n1", "n2", "n3", "n4"]


class Verbose(TempDirTest):
    def yeet(self, *extra):
        if os.geteuid() != 0:
            self.fail("needs root for the fake nodes' mount namespaces: run the e2e tests as root (CI does)")
        root = os.path.join(self.tmp, "root")
        os.makedirs(root, exist_ok=True)
        fake = self.write("bin/fakessh", FAKE_SSH, 0o755)
        self.write("src/payload.txt", "payload\n" * 1000)
        hostfile = self.write("hosts", "".join(h + "\n" for h in HOSTS))
        env = base_env(FAKESSH_ROOT=root, FAKESSH_BOXES=os.path.join(self.tmp, "boxes"), EZPZ_MACHINE="local")
        return subprocess.run([EZPZ, "yeet", os.path.join(self.tmp, "src"), "--dst", os.path.join(root, "dst"),
                               "--hostfile", hostfile, "--no-hsn", "--fanout", "2", "--ssh-command", fake, *extra],
                              env=env, capture_output=True, text=True, timeout=120)

    def test_yeet_says_the_plan_and_every_nodes_steps(self):
        proc = self.yeet("-v")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        err = proc.stderr
        self.assertRegex(err, r"\[info\] yeet: 4 other nodes through ssh \(.*fakessh\) \(--ssh-command\); tree: n\d")
        for h in HOSTS:
            # the node's own relay, its lines named by it, and the head's line for its result
            self.assertRegex(err, rf"\[info\] {h}: relay: reading the stream into ")
            self.assertRegex(err, rf"\[info\] {h}: relay: \d+ bytes of stream, SHA-256 ok; .*dst in place after ")
            self.assertRegex(err, rf"\[info\] {h}: ok after \d")
        # the head starts the first level, a relay the second (fan-out 2, 4 nodes)
        firsts = re.findall(r"\[info\] relay to (n\d): ready in ", err)
        seconds = re.findall(r"\[info\] (n\d): relay to (n\d): ready in ", err)
        self.assertEqual(len(firsts), 2, err)
        self.assertEqual(len(seconds), 2, err)
        self.assertEqual(sorted(firsts + [child for _, child in seconds]), HOSTS)
        self.assertTrue(all(parent in firsts for parent, _ in seconds), err)

    def test_without_v_yeet_says_none_of_it(self):
        proc = self.yeet()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("[info]", proc.stderr)

    def test_doctor_says_each_checks_verdict_and_time(self):
        env = base_env(EZPZ_MACHINE="local")
        proc = subprocess.run([EZPZ, "doctor", "-v"], env=env, capture_output=True, text=True, timeout=120)
        self.assertIn("[info] doctor: this host's facts in ", proc.stderr)
        for name in ("scheduler", "machine", "launcher", "python", "space", "user"):
            self.assertRegex(proc.stderr, rf"\[info\] doctor: {name}: (ok|warning|error) in \d+ ms: ")
        quiet = subprocess.run([EZPZ, "doctor"], env=env, capture_output=True, text=True, timeout=120)
        self.assertNotIn("[info]", quiet.stderr)

    def nodes(self, *args):
        """ezpz ARGS against the four fake nodes (--ssh-command: each runs what sshd would run)."""
        if os.geteuid() != 0:
            self.fail("needs root for the fake nodes' mount namespaces: run the e2e tests as root (CI does)")
        root = os.path.join(self.tmp, "root")
        os.makedirs(root, exist_ok=True)
        fake = self.write("bin/fakessh", FAKE_SSH, 0o755)
        hostfile = self.write("hosts", "".join(h + "\n" for h in HOSTS))
        env = base_env(FAKESSH_ROOT=root, FAKESSH_BOXES=os.path.join(self.tmp, "boxes"), EZPZ_MACHINE="local")
        return subprocess.run([EZPZ, *args, "--hostfile", hostfile, "--ssh-command", fake], env=env,
                              capture_output=True, text=True, timeout=120)

    def test_the_node_halves_of_doctor_and_kill_say_theirs_named_by_their_node(self):
        # each node names itself (its hostname: the fake nodes share this machine's)
        me = re.escape(socket.gethostname())
        proc = self.nodes("doctor", "--nodes", "--no-hsn", "-v")
        said = re.findall(rf"\[info\] {me}: doctor: /tmp has \d.* free; ezpz at /\S+: this one\n", proc.stderr)
        self.assertEqual(len(said), len(HOSTS), proc.stderr)
        self.assertNotIn("[info]", self.nodes("doctor", "--nodes", "--no-hsn").stderr)
        pattern = f"no-such-job-{os.getpid()}"
        proc = self.nodes("kill", "--all-nodes", "--grace", "0", "-v", pattern)
        self.assertEqual(proc.returncode, 1, proc.stderr)  # nothing matched anywhere, as pkill
        said = re.findall(rf"\[info\] {me}: kill: 0 processes of ezpz jobs here match '{pattern}'\n", proc.stderr)
        self.assertEqual(len(said), len(HOSTS), proc.stderr)  # the head's own line is not named
        self.assertNotIn("[info]", self.nodes("kill", "--all-nodes", "--grace", "0", pattern).stderr)

    def test_kill_says_what_it_signals(self):
        env = base_env()
        # a process of an ezpz job (EZPZ_JOB_ID set, as a rank has), under a job id of its own: the
        # pattern keeps other tests' jobs out
        job = f"127.0.0.1:{20000 + os.getpid() % 10000}"
        victim = subprocess.Popen(["sleep", "60"], env=dict(env, EZPZ_JOB_ID=job))
        try:
            proc = subprocess.run([EZPZ, "kill", "-v", "--grace", "0", job], env=env, capture_output=True, text=True,
                                  timeout=60)
            self.assertIn(f"[info] kill: 1 process of ezpz jobs here match '{job}'", proc.stderr)
            self.assertIn(f"[info] kill: SIGTERM to {victim.pid} (job {job}): sleep 60", proc.stderr)
            self.assertEqual(victim.wait(timeout=30), -15)
        finally:
            if victim.poll() is None:
                victim.kill()
                victim.wait()


class VerboseElsewhere(TempDirTest):
    """Issue #57 part 8: -v says something useful in every command."""

    def info(self, args, env=None):
        proc = subprocess.run([EZPZ, "-v", *args], env=env or base_env(EZPZ_MACHINE="local", PWD=self.tmp),
                              capture_output=True, text=True, timeout=120, cwd=self.tmp)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        quiet = subprocess.run([EZPZ, *args], env=env or base_env(EZPZ_MACHINE="local", PWD=self.tmp),
                               capture_output=True, text=True, timeout=120, cwd=self.tmp)
        self.assertNotIn("[info]", quiet.stderr)
        return [ln for ln in proc.stderr.splitlines() if "[info]" in ln]

    def test_env_says_the_job_it_found_and_the_launcher_line(self):
        lines = self.info(["env"])
        self.assertTrue(any(re.search(r"job: scheduler local, machine local \(.*\), 1 host from hostname", ln)
                            for ln in lines), lines)
        self.assertTrue(any("env: DIST_LAUNCH (the built-in launcher: ezpz launch)" in ln for ln in lines), lines)

    def test_submit_says_the_machine_and_the_script(self):
        lines = self.info(["submit", "--scheduler", "pbs", "--machine", "polaris", "--dry-run", "--", "hostname"])
        self.assertTrue(any("submit: machine polaris (named), its directives: -l filesystems=home:eagle" in ln
                            for ln in lines), lines)
        self.assertTrue(any(re.search(r"submit: a pbs script of \d+ lines", ln) for ln in lines), lines)

    def test_tar_env_says_what_it_packs_and_whether_it_reuses(self):
        self.write("venv/lib/a.py", "x = 1\n")
        venv = os.path.join(self.tmp, "venv")
        first = self.info(["tar-env", venv])
        self.assertTrue(any(f"tar-env: {venv} (" in ln and f"-> {venv}.tar.zst (zst)" in ln for ln in first), first)
        again = self.info(["tar-env", venv])
        self.assertTrue(any("is newer than every file of the env: reused" in ln for ln in again), again)

    def test_test_says_the_job_it_plans(self):
        lines = self.info(["test", "--dry-run", "--python", sys.executable])
        self.assertTrue(any("job: scheduler local" in ln for ln in lines), lines)


if __name__ == "__main__":
    main()
