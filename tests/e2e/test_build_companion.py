"""scripts/build-companion.sh against Debian's python3-torch (its CMake files are libtorch-dev's),
run from where the package puts it (share/ezpz/companion, as `cmake --install` lays it out): it
builds src/torch as a project of its own from the packaged sources, installs ezpz-test-train and
libezpz_torch.so in ~/.local, and `ezpz test --engine cpp` finds it there and passes; a python
without torch is named. It builds as against a pip wheel, which ships c10d's ProcessGroupGloo.hpp but
not the gloo headers it includes: src/torch/gloo_decls stands in for them (libgloo-dev's are ignored),
while the dev build's library (tests/torch) uses the real ones."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from ezpz_e2e import EZPZ, base_env, main

TORCH_PYTHON = "/usr/bin/python3"  # Debian's python3-torch (scripts/install-deps.sh)
BUILD_DIR = os.environ["EZPZ_BUILD_DIR"]


class BuildCompanion(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="ezpz-companion-")
        self.tmp = self._tmp.name
        self.env = base_env(PATH="/usr/bin:/bin", OMP_NUM_THREADS="1", EZPZ_HOME=os.path.join(self.tmp, "ezpz"))
        self.env.pop("EZPZ_TORCH_TRAIN", None)
        self.home = self.env["HOME"]
        # What the package holds, laid out by the build's own install rules.
        pkg = os.path.join(self.tmp, "pkg")
        subprocess.run(["cmake", "--install", BUILD_DIR, "--prefix", pkg], check=True, capture_output=True)
        self.script = ["bash", os.path.join(pkg, "share", "ezpz", "companion", "scripts", "build-companion.sh")]

    def tearDown(self):
        self._tmp.cleanup()

    def test_build_install_and_run(self):
        # BUILD_TYPE=None: no optimization, about a third less compile time (what is tested is the
        # build and the install, not the speed of the result).
        build_dir = os.path.join(self.tmp, "build")
        wheel_like = "-DEZPZ_GLOO_INCLUDE_DIR=EZPZ_GLOO_INCLUDE_DIR-NOTFOUND"  # as if no gloo headers were there
        build = subprocess.run([*self.script, TORCH_PYTHON, "--jobs", "2", "--build-dir", build_dir],
                               env=dict(self.env, BUILD_TYPE="None", CMAKE_ARGS=wheel_like), capture_output=True,
                               text=True, timeout=1500)
        self.assertEqual(build.returncode, 0, f"stdout: {build.stdout[-3000:]}\nstderr: {build.stderr[-3000:]}")
        with open(os.path.join(build_dir, "CMakeFiles", "ezpz_torch.dir", "flags.make")) as f:
            self.assertIn("/src/torch/gloo_decls", f.read())
        self.assertIn("build-companion: torch 1.13", build.stdout)
        installed = os.path.join(self.home, ".local", "bin", "ezpz-test-train")
        self.assertIn(f"installed {installed}", build.stdout)
        self.assertTrue(os.path.exists(os.path.join(self.home, ".local", "lib", "libezpz_torch.so")))
        self.assertTrue(os.path.exists(os.path.join(self.home, ".local", "include", "ezpz", "torch.hpp")))
        # A lone ezpz (nothing beside it, not on PATH) finds the companion in ~/.local/bin.
        lone = os.path.join(self.tmp, "bin", "ezpz")
        os.makedirs(os.path.dirname(lone))
        shutil.copy(EZPZ, lone)
        proc = subprocess.run([lone, "test", "--engine", "cpp", "--launcher", "local", "-n", "2", "--train-iters", "20",
                               "--json"], env=dict(self.env, PWD=self.tmp), cwd=self.tmp, capture_output=True,
                              text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, f"stdout: {proc.stdout}\nstderr: {proc.stderr}")
        result = json.loads(proc.stdout)
        self.assertEqual(result["engine"], "cpp")
        self.assertEqual(result["world_size"], 2)
        self.assertIn(f"ezpz test: engine cpp ({installed})", proc.stderr)
        for r in result["ranks"]:
            self.assertLess(sum(r["loss"][-5:]) / 5, sum(r["loss"][:5]) / 5, r["loss"])

    def test_a_python_without_torch_is_named(self):
        venv = os.path.join(self.tmp, "bare")
        subprocess.run([TORCH_PYTHON, "-m", "venv", "--without-pip", venv], check=True)
        proc = subprocess.run([*self.script, os.path.join(venv, "bin", "python3")], env=self.env, capture_output=True,
                              text=True, timeout=60)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("cannot import torch: ModuleNotFoundError: No module named 'torch'", proc.stderr)
        self.assertIn("activate the environment that has torch, or pass its python", proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.home, ".local")))


if __name__ == "__main__":
    main()
