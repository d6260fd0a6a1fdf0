"""`ezpz test` from a lone copy of the binary (nothing beside it, no companion anywhere): the Python
engine it carries trains with the job's own python3 and Debian's torch, under the built-in launcher
and Open MPI; the loss falls, the groups follow ezpz's layout, --json parses, `ezpz plot` reads the
History; a python without torch, or none, is named with the fix (exit 127)."""
import glob
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from ezpz_e2e import EZPZ, base_env, check_ezpz_test_tp2, main

# Debian's python3-torch (scripts/install-deps.sh installs it): a missing torch fails, never skips.
TORCH_PYTHON = "/usr/bin/python3"


class PythonEngine(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        probe = subprocess.run([TORCH_PYTHON, "-c", "import torch.distributed"], capture_output=True, text=True)
        assert probe.returncode == 0, f"{TORCH_PYTHON} has no torch (install python3-torch): {probe.stderr}"

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="ezpz-test-py-")
        self.tmp = self._tmp.name
        self.lone = os.path.join(self.tmp, "bin", "ezpz")
        os.makedirs(os.path.dirname(self.lone))
        shutil.copy(EZPZ, self.lone)
        # /usr/bin first: its python3 is the one with torch (as an activated environment would be).
        self.env = base_env(PATH="/usr/bin:/bin", OMP_NUM_THREADS="1", EZPZ_HOME=os.path.join(self.tmp, "home"),
                            PWD=self.tmp)
        self.env.pop("EZPZ_TORCH_TRAIN", None)

    def tearDown(self):
        self._tmp.cleanup()

    def ezpz(self, args, env=None, timeout=300):
        return subprocess.run([self.lone, *args], env=env or self.env, cwd=self.tmp, capture_output=True, text=True,
                              timeout=timeout)

    def run_json(self, *args):
        proc = self.ezpz(["test", "--json", *args])
        self.assertEqual(proc.returncode, 0, f"stdout: {proc.stdout}\nstderr: {proc.stderr}")
        result = json.loads(proc.stdout)
        self.assertEqual(result["engine"], "python")
        self.assertIn("ezpz test: engine python (/usr/bin/python3 with torch ", proc.stderr)
        self.assertIn("engine=python torch=", proc.stderr)
        return result, proc.stderr

    def assert_loss_fell(self, result, iters):
        for r in result["ranks"]:
            loss = r["loss"]
            self.assertEqual(len(loss), iters)
            self.assertLess(sum(loss[-5:]) / 5, sum(loss[:5]) / 5 - 0.05, f"rank {r['rank']}: {loss}")

    def test_two_ranks_built_in_launcher_and_plot(self):
        result, stderr = self.run_json("--launcher", "local", "-n", "2", "--train-iters", "40")
        self.assertEqual(result["world_size"], 2)
        for r in result["ranks"]:
            self.assertEqual(r["groups"], {"tp": [r["rank"]], "pp": [r["rank"]], "cp": [r["rank"]], "dp": [0, 1]})
        self.assert_loss_fell(result, 40)
        self.assertIn("iter=40 loss=", stderr)
        self.assertIn("(fell on every rank), parameters identical across replicas", stderr)
        files = glob.glob(os.path.join(self.tmp, "outputs/ezpz-test/history/*/*.jsonl"))
        self.assertEqual(len(files), 1, files)
        with open(files[0]) as f:
            first = json.loads(f.readline())
        self.assertEqual(first["metrics"]["iter"], 1)
        self.assertIn("loss/mean", first["aggregated"])
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(files[0]), "report.md")))
        plot = self.ezpz(["plot", files[0], "--key", "loss/mean"])
        self.assertEqual(plot.returncode, 0, plot.stderr)
        self.assertIn("loss/mean: 40 points", plot.stdout)

    def test_tp2_on_four_ranks_under_open_mpi(self):
        result, stderr = self.run_json("--launcher", "mpirun", "-n", "4", "--tp", "2", "--train-iters", "30",
                                       "--print-freq", "30")
        check_ezpz_test_tp2(self, result, 30)
        self.assertIn("world=4 tp=2 pp=1 cp=1 dp=2", stderr)

    def test_pp_and_cp_groups_are_reported(self):
        result, _ = self.run_json("--launcher", "local", "-n", "4", "--tp", "2", "--cp", "2", "--train-iters", "3")
        cp = {r["rank"]: r["groups"]["cp"] for r in result["ranks"]}
        self.assertEqual(cp, {0: [0, 2], 1: [1, 3], 2: [0, 2], 3: [1, 3]})
        self.assertTrue(all(r["groups"]["dp"] == [r["rank"]] for r in result["ranks"]))

    def test_a_python_without_torch_is_named_with_the_fix(self):
        venv = os.path.join(self.tmp, "bare")
        subprocess.run([TORCH_PYTHON, "-m", "venv", "--without-pip", venv], check=True)
        bare = os.path.join(venv, "bin", "python3")
        for args, env in ((["--python", bare], None), ([], dict(self.env, PATH=f"{venv}/bin:/usr/bin:/bin"))):
            proc = self.ezpz(["test", "-n", "2", *args], env=env)
            self.assertEqual(proc.returncode, 127, proc.stderr)
            self.assertEqual(proc.stdout, "")
            lines = proc.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, proc.stderr)
            self.assertIn(f"{bare} cannot import torch (ModuleNotFoundError: No module named 'torch')", lines[0])
            self.assertIn(f"pass --python PATH, or install it ({bare} -m pip install torch)", lines[0])
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "outputs")))

    def test_no_python_at_all(self):
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(empty)
        proc = self.ezpz(["test", "-n", "2"], env=dict(self.env, PATH=empty))
        self.assertEqual(proc.returncode, 127, proc.stderr)
        self.assertIn("no python3 found: activate the environment that has torch, or pass --python PATH",
                      proc.stderr)

    def test_engine_cpp_without_the_companion(self):
        proc = self.ezpz(["test", "-n", "2", "--engine", "cpp"])
        self.assertEqual(proc.returncode, 127)
        self.assertEqual(proc.stdout, "")
        self.assertIn("needs the companion program ezpz-test-train, which is not installed: build it against "
                      "your torch with scripts/build-companion.sh", proc.stderr)
        self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)

    def test_dry_run_names_the_python_and_writes_nothing(self):
        proc = self.ezpz(["test", "--dry-run", "--launcher", "local", "-n", "2"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(f"/usr/bin/python3 {self.tmp}/outputs/ezpz-test/.ezpz-test-train.py --train-iters 200",
                      proc.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "outputs")))


if __name__ == "__main__":
    main()
