"""Helpers for end-to-end tests: run the built ezpz binary with a controlled environment."""
import atexit
import json
import os
import shutil
import subprocess
import tempfile
import unittest

EZPZ = os.environ["EZPZ_BIN"]
SOURCE_DIR = os.environ.get("EZPZ_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


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


def run(args, env=None, check=None):
    proc = subprocess.run([EZPZ, *args], env=env if env is not None else base_env(),
                          capture_output=True, text=True, timeout=60)
    if check is not None and proc.returncode != check:
        raise AssertionError(f"ezpz {args} exited {proc.returncode}, wanted {check}\n"
                             f"stdout: {proc.stdout}\nstderr: {proc.stderr}")
    return proc


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
