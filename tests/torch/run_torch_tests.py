"""Multi-rank tests of libezpz_torch over gloo on this machine, through the built ezpz:
`ezpz launch --launcher local -n N -- ezpz_torch_checks SCENARIO` for the library's checks
(groups, TP layers, data parallel, collectives), rendezvous timeouts, and `ezpz test` /
`ezpz plot` end to end. Run one test: run_torch_tests.py Class.test_name."""
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from ezpz_e2e import check_ezpz_test_tp2, main  # noqa: E402  (a skip exits 77, never 0)

EZPZ = os.environ["EZPZ_BIN"]
CHECKS = os.environ["EZPZ_TORCH_CHECKS"]
TRAIN = os.environ["EZPZ_TORCH_TRAIN"]


def clean_env(**extra):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1"}
    env.update({k: str(v) for k, v in extra.items()})
    return env


class TorchTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="ezpz-torch-")
        self.tmp = self._tmp.name
        self.env = clean_env(HOME=self.tmp, EZPZ_HOME=os.path.join(self.tmp, "ezpz-home"), PWD=self.tmp)

    def tearDown(self):
        self._tmp.cleanup()

    def ezpz(self, args, env=None, timeout=120):
        return subprocess.run([EZPZ, *args], env=env or self.env, cwd=self.tmp, capture_output=True, text=True,
                              timeout=timeout)

    def launch(self, n, scenario):
        proc = self.ezpz(["launch", "--launcher", "local", "-n", str(n), "--", CHECKS, scenario])
        msg = f"{scenario} on {n} ranks exited {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
        self.assertEqual(proc.returncode, 0, msg)
        self.assertIn(f"OK {scenario} on {n} ranks", proc.stdout, msg)
        self.assertNotIn("FAIL", proc.stderr, msg)


class Checks(TorchTest):
    def test_collectives_2(self):
        self.launch(2, "collectives")

    def test_collectives_4(self):
        self.launch(4, "collectives")

    def test_groups_4(self):
        self.launch(4, "groups")

    def test_groups_8(self):
        self.launch(8, "groups")

    def test_tp_layers_2(self):
        self.launch(2, "tp_layers")

    def test_tp_layers_4(self):
        self.launch(4, "tp_layers")

    def test_data_parallel_2(self):
        self.launch(2, "data_parallel")

    def test_data_parallel_4(self):
        self.launch(4, "data_parallel")

    def test_names_2(self):
        self.launch(2, "names")

    def test_on_device_2(self):  # cpu and gloo here; scripts/gpu-check.sh runs it on a GPU
        self.launch(2, "on_device")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Rendezvous(TorchTest):
    def rank_alone(self, rank, world, port):
        env = dict(self.env, RANK=rank, WORLD_SIZE=world, LOCAL_RANK=rank, MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=port, EZPZ_RENDEZVOUS_TIMEOUT="2")
        start = time.monotonic()
        proc = subprocess.run([CHECKS, "setup_only"], env={k: str(v) for k, v in env.items()}, cwd=self.tmp,
                              capture_output=True, text=True, timeout=60)
        return proc, time.monotonic() - start

    def test_missing_rank_is_named(self):
        proc, took = self.rank_alone(0, 3, free_port())
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("timed out after 2 s: 2 of 3 ranks never joined (missing ranks 1, 2)", proc.stderr)
        self.assertLess(took, 20)

    def test_missing_rank_zero_is_reported_by_the_others(self):
        port = free_port()
        proc, took = self.rank_alone(1, 2, port)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn(f"rank 1 could not reach the rendezvous at 127.0.0.1:{port}", proc.stderr)
        self.assertLess(took, 30)

    def test_no_master_address(self):
        env = dict(self.env, RANK="0", WORLD_SIZE="2")
        proc = subprocess.run([CHECKS, "setup_only"], env=env, cwd=self.tmp, capture_output=True, text=True,
                              timeout=30)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("MASTER_ADDR and MASTER_PORT are not both set", proc.stderr)


class Names(TorchTest):
    """One process (WORLD_SIZE 1), no launcher: what the environment decides."""

    def alone(self, scenario, **extra):
        return subprocess.run([CHECKS, scenario], env=dict(self.env, **extra), cwd=self.tmp, capture_output=True,
                              text=True, timeout=60)

    def test_machine_named_by_ezpz_machine(self):
        proc = self.alone("names", EZPZ_MACHINE="sunspot")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("machine=sunspot", proc.stdout)
        self.assertIn("OK names on 1 ranks", proc.stdout)

    def test_unknown_device_is_named(self):
        proc = self.alone("setup_only", TORCH_DEVICE="bogus")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn('device "bogus" (from SetupOptions::device or TORCH_DEVICE) is not a device type libtorch knows',
                      proc.stderr)


class Exports(unittest.TestCase):
    def test_only_the_api_is_exported(self):
        """libezpz_torch exports ezpz's public API alone: no ezpz::core or ezpz::detail, no template copies."""
        if shutil.which("nm") is None:
            self.skipTest("no nm on PATH")
        lib = os.environ["EZPZ_TORCH_LIB"]
        proc = subprocess.run(["nm", "-D", "--defined-only", "-C", lib], capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        names = [line.split(maxsplit=2)[2] for line in proc.stdout.splitlines() if len(line.split(maxsplit=2)) == 3]
        self.assertEqual([n for n in names if "ezpz::core::" in n or "ezpz::detail::" in n], [])
        if sys.platform.startswith("linux"):  # the version script: nothing but ezpz::
            foreign = [n for n in names if not re.match(r"((typeinfo|typeinfo name|vtable) for )?ezpz::", n)]
            self.assertEqual(foreign, [])
        for want in ("ezpz::setup(", "ezpz::setup_torch(", "ezpz::get_dist_info(", "ezpz::wrap_model(",
                     "ezpz::synchronize(", "ezpz::Group::all_reduce(", "ezpz::History::update(",
                     "typeinfo for ezpz::tp::ColumnParallelLinearImpl"):
            self.assertTrue(any(n.startswith(want) for n in names), f"{want} is not exported:\n{proc.stdout}")


class EzpzTest(TorchTest):
    def run_test(self, *args):
        proc = self.ezpz(["test", "--launcher", "local", "--json", *args])
        self.assertEqual(proc.returncode, 0, f"stdout: {proc.stdout}\nstderr: {proc.stderr}")
        result = json.loads(proc.stdout)
        self.assertEqual(result["engine"], "cpp")  # the companion, found through EZPZ_TORCH_TRAIN
        self.assertIn("engine=cpp", proc.stderr)
        return result, proc.stderr

    def assert_loss_fell(self, result, iters):
        for r in result["ranks"]:
            loss = r["loss"]
            self.assertEqual(len(loss), iters)
            self.assertLess(sum(loss[-5:]) / 5, sum(loss[:5]) / 5 - 0.1, f"rank {r['rank']}: {loss}")

    def test_json_2_ranks_and_plot(self):
        result, stderr = self.run_test("-n", "2", "--train-iters", "50", "--print-freq", "10")
        self.assertEqual(result["world_size"], 2)
        self.assertEqual([r["rank"] for r in result["ranks"]], [0, 1])
        for r in result["ranks"]:
            self.assertEqual(r["groups"], {"tp": [r["rank"]], "pp": [r["rank"]], "cp": [r["rank"]], "dp": [0, 1]})
        self.assert_loss_fell(result, 50)
        self.assertIn("iter=50 loss=", stderr)
        self.assertIn("(fell on every rank), parameters identical across replicas", stderr)
        # History wrote JSONL in Python ezpz's layout; ezpz plot renders it.
        files = glob.glob(os.path.join(self.tmp, "outputs/ezpz-test/history/*/*.jsonl"))
        self.assertEqual(len(files), 1)
        with open(files[0]) as f:
            first = json.loads(f.readline())
        self.assertEqual(first["metrics"]["iter"], 1)
        self.assertIn("loss/mean", first["aggregated"])
        self.assertTrue(glob.glob(os.path.join(os.path.dirname(files[0]), "report.md")))
        plot = self.ezpz(["plot", files[0], "--key", "loss/mean"])
        self.assertEqual(plot.returncode, 0, plot.stderr)
        self.assertIn("loss/mean: 50 points", plot.stdout)
        missing = self.ezpz(["plot", files[0], "--key", "nope"])
        self.assertEqual(missing.returncode, 2)
        self.assertIn('has no metric "nope"', missing.stderr)
        # A second run, then the README's and the man page's own example, glob and all: both runs
        # overlaid on one plot, each labelled by its run directory.
        self.run_test("-n", "2", "--train-iters", "20", "--print-freq", "10")
        runs = sorted(glob.glob(os.path.join(self.tmp, "outputs/ezpz-test/history/*")))
        self.assertEqual(len(runs), 2, runs)
        readme = subprocess.run(["sh", "-c", f"{EZPZ} plot outputs/ezpz-test/history/*/*.jsonl --key loss"],
                                cwd=self.tmp, capture_output=True, text=True, timeout=60)
        self.assertEqual(readme.returncode, 0, readme.stderr)
        self.assertIn("2 files", readme.stdout)
        for run_dir, points in zip(runs, (50, 20)):
            self.assertIn(f"{os.path.basename(run_dir)}: {points} points", readme.stdout)

    def test_tp2_on_4_ranks(self):
        result, _ = self.run_test("-n", "4", "--tp", "2", "--train-iters", "50", "--print-freq", "50")
        check_ezpz_test_tp2(self, result, 50)

    def test_pp_cp_groups_reported(self):
        result, _ = self.run_test("-n", "4", "--tp", "2", "--cp", "2", "--train-iters", "3")
        cp = {r["rank"]: r["groups"]["cp"] for r in result["ranks"]}
        self.assertEqual(cp, {0: [0, 2], 1: [1, 3], 2: [0, 2], 3: [1, 3]})
        self.assertTrue(all(r["groups"]["dp"] == [r["rank"]] for r in result["ranks"]))

    def test_without_the_companion(self):
        # A lone copy of ezpz: nothing beside it, no build tree, nothing on PATH.
        lone = os.path.join(self.tmp, "bin", "ezpz")
        os.makedirs(os.path.dirname(lone))
        shutil.copy(EZPZ, lone)
        proc = subprocess.run([lone, "test", "-n", "2", "--engine", "cpp"],
                              env=clean_env(HOME=self.tmp, PATH="/usr/bin:/bin"), capture_output=True, text=True,
                              timeout=30)
        self.assertEqual(proc.returncode, 127)
        self.assertEqual(proc.stdout, "")
        self.assertIn("ezpz test --engine cpp needs the companion program ezpz-test-train, which is not installed",
                      proc.stderr)
        self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)


if __name__ == "__main__":
    main()
