"""Helpers for end-to-end tests: run the built ezpz binary with a controlled environment."""
import atexit
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

EZPZ = os.environ["EZPZ_BIN"]
SOURCE_DIR = os.environ.get("EZPZ_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


# Every e2e and torch test has this as its SKIP_RETURN_CODE (tests/CMakeLists.txt): ctest reports
# the test as skipped ("Not Run"), and scripts/ctest-strict.sh (what CI runs) fails on any skip.
SKIP_CODE = 77


def main(**kwargs):
    """unittest.main for a test file run by ctest: exit 1 on any failure, SKIP_CODE (never 0) when
    any test was skipped or none ran, 0 only when every test ran and passed."""
    result = unittest.main(exit=False, **kwargs).result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.skipped or result.testsRun == 0:
        print(f"SKIPPED: {len(result.skipped)} of {result.testsRun} tests skipped: exiting {SKIP_CODE} "
              f"(a skip is not a pass)", file=sys.stderr)
        sys.exit(SKIP_CODE)
    sys.exit(0)


_HOMES = tempfile.mkdtemp(prefix="ezpz-e2e-homes-")
atexit.register(shutil.rmtree, _HOMES, True)


def base_env(**extra):
    """A clean environment: no scheduler variables, a private HOME, the system PATH."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": tempfile.mkdtemp(prefix="home-", dir=_HOMES),
        "LANG": "C.UTF-8",
    }
    env.update({k: str(v) for k, v in extra.items()})
    return env


def mpich_env(tmp, env):
    """`env` with Debian's MPICH first on PATH as `mpiexec` (Open MPI owns the plain name)."""
    mpich = os.path.join(tmp, "mpich", "bin")
    os.makedirs(mpich)
    os.symlink("/usr/bin/mpiexec.mpich", os.path.join(mpich, "mpiexec"))
    os.symlink("/usr/bin/hydra_pmi_proxy", os.path.join(mpich, "hydra_pmi_proxy"))
    return dict(env, PATH=mpich + ":" + env["PATH"])


def run(args, env=None, check=None):
    proc = subprocess.run([EZPZ, *args], env=env if env is not None else base_env(),
                          capture_output=True, text=True, timeout=60)
    if check is not None and proc.returncode != check:
        raise AssertionError(f"ezpz {args} exited {proc.returncode}, wanted {check}\n"
                             f"stdout: {proc.stdout}\nstderr: {proc.stderr}")
    return proc


def wait_for_line(stream, needle, seconds=120):
    """Read lines from `stream` (a child's pipe) until one contains `needle`; return it. Fails at end
    of file or after `seconds`, generous for the asan preset on 2 busy cores. For waiting on the
    state a signal assumes, instead of sleeping a fixed time before it."""
    found = queue.Queue()
    seen = []

    def reader():
        for line in stream:
            seen.append(line)
            if needle in line:
                found.put(line)
                return
        found.put(None)

    threading.Thread(target=reader, daemon=True).start()
    try:
        line = found.get(timeout=seconds)
    except queue.Empty:
        line = None
    if line is None:
        raise AssertionError(f"no line with {needle!r} within {seconds} s; read: {''.join(seen)!r}")
    return line


def wait_until(predicate, seconds=120, step=0.02):
    """Poll `predicate` until it holds (True) or `seconds` pass (its last value)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def plan(args, env):
    proc = run(["launch", "--dry-run", "--json", *args], env, check=0)
    return json.loads(proc.stdout)


class TempDirTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="ezpz-e2e-")
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def write(self, name, text, mode=None):
        path = os.path.join(self.tmp, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        if mode is not None:
            os.chmod(path, mode)
        return path


def counting_ssh(tmp):
    """A stand-in ssh (for --ssh-command) that runs the remote command here and appends, on each
    start, how many of it are running at that moment to the file it returns (with its path)."""
    running = os.path.join(tmp, "ssh-running")
    os.makedirs(running)
    counts = os.path.join(tmp, "ssh-counts")
    fake = os.path.join(tmp, "countingssh")
    with open(fake, "w") as f:
        f.write(f"""#!/bin/sh
host=$1
touch "{running}/$host"
ls "{running}" | wc -l >> "{counts}"
sleep 0.3
sh -c "$2"
rc=$?
rm -f "{running}/$host"
exit $rc
""")
    os.chmod(fake, 0o755)
    return fake, counts


def read_counts(counts):
    with open(counts) as f:
        return [int(line) for line in f]


def check_ezpz_test_tp2(test, result, iters):
    """`ezpz test -n 4 --tp 2 --json`, either engine: ezpz's layout (TP fastest), the loss fell on
    every rank, and the ranks of one TP group (one model, the same batches) had equal losses."""
    test.assertEqual(result["world_size"], 4)
    tp = {r["rank"]: r["groups"]["tp"] for r in result["ranks"]}
    dp = {r["rank"]: r["groups"]["dp"] for r in result["ranks"]}
    test.assertEqual(tp, {0: [0, 1], 1: [0, 1], 2: [2, 3], 3: [2, 3]})
    test.assertEqual(dp, {0: [0, 2], 1: [1, 3], 2: [0, 2], 3: [1, 3]})
    for r in result["ranks"]:
        test.assertEqual(len(r["loss"]), iters)
        test.assertLess(sum(r["loss"][-5:]) / 5, sum(r["loss"][:5]) / 5 - 0.05, f"rank {r['rank']}: {r['loss']}")
    losses = {r["rank"]: r["loss"] for r in result["ranks"]}
    test.assertEqual(losses[0], losses[1])
    test.assertEqual(losses[2], losses[3])
    test.assertNotEqual(losses[0], losses[2])
