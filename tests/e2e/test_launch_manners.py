"""What a new user of ezpz launch tripped over (issue #27): DNS, flags, notices, warnings."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from ezpz_e2e import EZPZ, TempDirTest, base_env, main  # noqa: E402

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
        self.assertLess(dry["seconds"], 4.0)  # asan on 2 busy cores; a look-up would take 5 s
        # A real launch asks, waits at most 2 s, says so, and runs with the host's own name.
        self.assertEqual(launched["rc"], 0, launched["stderr"])
        self.assertGreater(launched["queries"], 0)
        self.assertIn("did not resolve within 2.0 s (slow DNS): MASTER_ADDR=", launched["stderr"])
        self.assertLess(launched["seconds"], 4.9)


if __name__ == "__main__":
    main(verbosity=2)
