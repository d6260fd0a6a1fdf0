"""What a new user of ezpz launch tripped over (issue #27): DNS, flags, notices, warnings."""
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from ezpz_e2e import EZPZ, TempDirTest, base_env, main, mpich_env  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


class Lookups(TempDirTest):
    """Where DNS never answers (a lost UDP answer: glibc waits 5 s per try)."""

    def blackhole(self, env, *argvs):
        self.assertEqual(os.geteuid(), 0, "needs root (as the cluster tests) for a network namespace")
        proc = subprocess.run(["unshare", "-n", "-m", sys.executable, os.path.join(HERE, "dns_blackhole.py"),
                               json.dumps([list(a) for a in argvs])], env=env, capture_output=True, text=True,
                              timeout=120, check=True)
        return [json.loads(line) for line in proc.stdout.splitlines()]

    def test_a_dry_run_looks_nothing_up_and_a_launch_bounds_its_look_up(self):
        hostfile = self.write("hosts", "x3005c0s7b0n0\nx3005c0s7b1n0\n")
        env = base_env(EZPZ_HOME=os.path.join(self.tmp, "home"))
        dry, launched = self.blackhole(
            env,
            [EZPZ, "launch", "--dry-run", "--machine", "polaris", "--hostfile", hostfile, "--", "true"],
            [EZPZ, "launch", "--machine", "polaris", "--launcher", "local", "-n", "1", "--no-record", "--", "true"])
        self.assertEqual(dry["rc"], 0, dry["stderr"])
        self.assertEqual(dry["queries"], 0, "a dry run asked DNS")
        self.assertIn("--master-addr=x3005c0s7b0n0.hsn.cm.polaris.alcf.anl.gov", dry["stdout"])
        self.assertLess(dry["seconds"], 15)  # a look-up would take 30 s (glibc's longest timeout)
        # A real launch asks, waits at most 2 s, says so, and runs with the host's own name.
        self.assertEqual(launched["rc"], 0, launched["stderr"])
        self.assertGreater(launched["queries"], 0)
        self.assertIn("did not resolve within 2.0 s (slow DNS): MASTER_ADDR=", launched["stderr"])
        self.assertLess(launched["seconds"], 15)  # 2 s and a launch, not the resolver's 30 s



class DryRun(TempDirTest):
    def polaris(self):
        nodes = self.write("nodes", "x3005c0s7b0n0\nx3005c0s7b1n0\n")
        return base_env(PBS_JOBID="1.polaris", PBS_NODEFILE=nodes, EZPZ_MACHINE="polaris",
                        EZPZ_HOME=os.path.join(self.tmp, "home"))

    def words(self, text):
        """The words bash reads in `text` (one command, maybe over several lines)."""
        got = subprocess.run(["bash", "-c", "printf '%s\\0' " + text], capture_output=True, text=True, check=True)
        return got.stdout.split("\0")[:-1]

    def test_the_line_is_folded_for_a_terminal_and_runs_the_same(self):
        argv = [EZPZ, "launch", "--dry-run", "-n", "8", "--", "python3", "-c", "print(1)"]
        env = self.polaris()
        env["MASTER_PORT"] = "29500"  # the same line twice
        flat = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
        self.assertEqual(flat.count("\n"), 1, flat)  # a pipe or a file: one line, as documented
        tty = subprocess.run(["script", "-qec", shlex.join(argv), "/dev/null"], env=env, capture_output=True,
                             text=True, check=True).stdout.replace("\r\n", "\n")
        lines = tty.rstrip("\n").split("\n")
        self.assertEqual(len(lines), 3, tty)
        self.assertTrue(lines[0].startswith("mpiexec ") and lines[0].endswith(" \\"), lines)
        self.assertTrue(lines[1].startswith(f"  {EZPZ} __rank-env ") and lines[1].endswith(" \\"), lines)
        self.assertEqual(lines[2], "  -- python3 -c 'print(1)'")
        # The same words either way: the shim is half of the real line, shown in both.
        strip = [w for w in self.words(flat) if not w.startswith(("--record-dir=", "--log-dir=", "--run-id="))]
        folded = [w for w in self.words(tty) if not w.startswith(("--record-dir=", "--log-dir=", "--run-id="))]
        self.assertEqual(strip, folded)
        self.assertIn("__rank-env", strip)

    def test_a_binary_on_node_local_storage_is_a_warning_for_several_hosts(self):
        local = tempfile.mkdtemp(prefix="ezpz-bin-", dir="/tmp")
        try:
            exe = os.path.join(local, "ezpz")
            shutil.copy(EZPZ, exe)
            proc = subprocess.run([exe, "launch", "--dry-run", "--", "true"], env=self.polaris(),
                                  capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn(f"ezpz is at {exe}, node-local storage, and the rank shim runs it from that path on "
                          "all 2 hosts", proc.stderr)
            proc = subprocess.run([exe, "launch", "--dry-run", "--nhosts", "1", "--", "true"], env=self.polaris(),
                                  capture_output=True, text=True)
            self.assertNotIn("node-local", proc.stderr)
        finally:
            shutil.rmtree(local, ignore_errors=True)



class Flags(TempDirTest):
    def env(self, **extra):
        return base_env(EZPZ_HOME=os.path.join(self.tmp, "home"), **extra)

    def ezpz(self, *args, env=None):
        return subprocess.run([EZPZ, *args], env=env or self.env(), capture_output=True, text=True, timeout=120)

    def test_n_with_an_equals_sign(self):
        for flag in ("-n=2", "-n2", "--np=2"):
            with self.subTest(flag=flag):
                proc = self.ezpz("launch", flag, "--dry-run", "--", "true")
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual(proc.stdout.strip(), "ezpz launch --launcher local --np=2 -- true")

    def test_v_before_the_command_is_ezpz_s_own(self):
        for flags in (["-v"], ["-vv"], ["--verbose"], ["-vv", "--launcher", "mpirun"]):
            with self.subTest(flags=flags):
                proc = self.ezpz("launch", *flags, "-n", "2", "--dry-run", "--", "true")
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertNotIn(" -v", proc.stdout)  # not the launcher's
                self.assertNotIn("--verbose", proc.stdout)
        self.assertIn("[debug]", self.ezpz("launch", "-vv", "--dry-run", "--", "true").stderr)
        # Without --: the command's own -v stays the command's.
        proc = self.ezpz("launch", "--dry-run", "python3", "x.py", "-v")
        self.assertEqual(proc.stdout.strip(), "ezpz launch --launcher local --np=1 -- python3 x.py -v")
        # Every command takes -v after its name.
        proc = self.ezpz("env", "-vv")
        self.assertEqual(proc.returncode, 0, proc.stderr)

    def test_the_omp_notice_once_per_launch_and_silenced_by_config(self):
        proc = self.ezpz("launch", "-n", "2", "--retries", "2", "--retry-delay", "0", "--", "false")
        self.assertEqual(proc.stderr.count("OMP_NUM_THREADS=1 for every rank"), 1, proc.stderr)
        self.assertEqual(proc.stderr.count("attempt "), 2, proc.stderr)
        cfg = self.write("config.toml", "[launch]\nomp_notice = false\n")
        proc = self.ezpz("launch", "-n", "2", "--", "true", env=self.env(EZPZ_CONFIG=cfg))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("OMP_NUM_THREADS", proc.stderr)
        bad = self.write("bad.toml", "[launch]\nomp_notise = false\n")
        proc = self.ezpz("launch", "-n", "2", "--", "true", env=self.env(EZPZ_CONFIG=bad))
        self.assertEqual(proc.returncode, 2)
        self.assertIn("omp_notise", proc.stderr)
        self.assertIn("known keys: omp_notice", proc.stderr)


class Unreachable(TempDirTest):
    """A host the launcher's ssh cannot reach: MPICH's mpiexec (Hydra) would wait for its proxy for
    ever; ezpz stops it at ssh's words, names the host, exits 255, and leaves no rank behind."""

    def test_a_host_ssh_cannot_reach_is_named_and_nothing_waits(self):
        hostfile = self.write("hosts", "localhost\nnosuchhost.invalid\n")
        env = base_env(EZPZ_HOME=os.path.join(self.tmp, "home"), PMIX_MCA_psec="native")
        marker = "31.4159"  # this test's ranks: `sleep 31.4159`
        for launcher, run_env in (("mpiexec", mpich_env(self.tmp, env)), ("mpirun", env)):
            with self.subTest(launcher=launcher):
                proc = subprocess.run([EZPZ, "launch", "--launcher", launcher, "--hostfile", hostfile, "-n", "2",
                                       "--ppn", "1", "--", "sleep", marker], env=run_env, capture_output=True,
                                      text=True, timeout=60)
                self.assertEqual(proc.returncode, 255, proc.stderr)
                self.assertRegex(proc.stderr, r"ezpz: error: job failed: " + launcher +
                                 r" cannot reach nosuchhost(\.invalid)?: ssh: Could not resolve hostname", proc.stderr)
                self.assertNotIn("killed by signal", proc.stderr)  # ranks ended by ezpz's stop are no cause
                path = sorted(glob.glob(os.path.join(self.tmp, "home", "jobs", "*", "launch-*.json")),
                              key=os.path.getmtime)[-1]
                with open(path, encoding="utf-8") as f:
                    record = json.load(f)
                self.assertEqual(record["exit_code"], 255, record)
                self.assertIn(launcher + " cannot reach nosuchhost", record["launcher_blocked"])
                left = subprocess.run(["pgrep", "-f", "sleep " + marker], capture_output=True, text=True).stdout
                self.assertEqual(left, "", f"ranks left behind by {launcher}: {left}")


if __name__ == "__main__":
    main(verbosity=2)
