"""The messages a new user meets when something is wrong: each names the thing and the fix, exits
non-zero, and writes nothing. Some need a user without root's exemptions (a process limit, a
directory it cannot write): a throwaway one, as the shared-machine tests make."""
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from ezpz_e2e import EZPZ, TempDirTest, base_env, main, run  # noqa: E402


class Messages(TempDirTest):
    def refused(self, args, said, env=None):
        proc = run(args, env or base_env(PWD=self.tmp), check=2)
        self.assertIn(said, proc.stderr)
        return proc

    def test_empty_and_wrong_values(self):
        self.refused(["launch", "--hostfile", self.tmp, "--dry-run", "--", "hostname"],
                     f"hostfile {self.tmp} (from --hostfile {self.tmp}) is a directory")
        self.refused(["launch", "--hostfile", "", "--dry-run", "--", "hostname"],
                     "--hostfile needs a path, e.g. --hostfile nodes.txt (got '')")
        src = os.path.join(self.tmp, "src")
        os.makedirs(src)
        for args in (["--dst", ""], ["--dst="]):
            self.refused(["yeet", *args, "--dry-run", src], "--dst needs a path, e.g. --dst /tmp/env (got '')")
        self.refused(["launch", "-n", "", "--dry-run", "--", "hostname"], "-n needs a whole number, e.g. -n 8 (got '')")
        proc = self.refused(["launch", "-n", "99999999999999999999", "--dry-run", "--", "hostname"],
                            "-n is too large a number")
        self.assertNotIn("Could not convert", proc.stderr)
        self.refused(["yeet", "--dst", "/tmp", "--dry-run", src],
                     "destination /tmp is a filesystem root: yeet replaces its destination whole; pass a --dst "
                     "inside it, such as /tmp/NAME")
        # --filesystems '' means none: not refused.
        out = run(["submit", "--scheduler", "pbs", "--filesystems", "", "--dry-run", "--", "hostname"],
                  base_env(PWD=self.tmp), check=0).stdout
        self.assertNotIn("filesystems", out)

    def test_commands_that_cannot_be_what_was_meant(self):
        self.refused(["launch", "--", self.tmp], f"{self.tmp} is a directory, not a program")
        bindir = os.path.join(self.tmp, "bin")
        os.makedirs(bindir)
        os.symlink(shutil.which("python3"), os.path.join(bindir, "python3"))
        env = base_env(PWD=self.tmp, PATH=bindir)  # python3 there, python nowhere
        self.refused(["launch", "--", "python", "-c", "1"],
                     "python: command not found, but python3 is on PATH: ezpz launch -- python3 -c 1", env)

    def test_command_words(self):
        proc = self.refused(["yeet-env"], "unknown command 'yeet-env': the Python ezpz's name; here it is 'ezpz yeet'")
        proc = self.refused(["nosuch", "--help"], "unknown command 'nosuch'")
        self.assertEqual(proc.stdout, "")
        self.refused(["lanch", "--", "x"], "unknown command 'lanch' (did you mean 'launch'?)")
        # --json before the command is the command's.
        plan = json.loads(run(["--json", "launch", "--dry-run", "--", "hostname"], base_env(), check=0).stdout)
        self.assertEqual(plan["argv"], ["hostname"])
        help_text = run(["yeet", "--help"], base_env(), check=0).stdout
        self.assertIn("--src PATH", help_text)
        self.assertIn("--dst DIR", help_text)
        self.assertIn("Print one JSON object: {summary: {ok, warnings, failed}, checks:",
                      " ".join(run(["doctor", "--help"], base_env(), check=0).stdout.split()))


class AsAUser(TempDirTest):
    """What root is exempt from: a process limit, a directory it cannot write."""

    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise AssertionError("these tests make a throwaway user: run them as root (CI does)")
        cls.name = "ezm" + str(os.getpid() % 100000)
        subprocess.run(["userdel", cls.name], capture_output=True)
        subprocess.run(["useradd", "-M", "-U", "-s", "/bin/sh", "-d", "/nonexistent", cls.name], check=True)
        cls.user = pwd.getpwnam(cls.name)
        cls.bindir = tempfile.mkdtemp(prefix="ezpz-msg-bin-")
        os.chmod(cls.bindir, 0o755)
        cls.exe = os.path.join(cls.bindir, "ezpz")
        shutil.copy(EZPZ, cls.exe)
        os.chmod(cls.exe, 0o755)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.bindir, ignore_errors=True)
        subprocess.run(["userdel", cls.name], capture_output=True)

    def as_user(self, script, cwd, **env):
        home = tempfile.mkdtemp(prefix="ezpz-msg-home-")
        shutil.chown(home, self.user.pw_uid, self.user.pw_gid)
        full = base_env(HOME=home, PWD=cwd, EZPZ=self.exe, **env)
        proc = subprocess.run(["setpriv", f"--reuid={self.user.pw_uid}", f"--regid={self.user.pw_gid}",
                               "--clear-groups", "bash", "-c", script], env=full, cwd=cwd, capture_output=True,
                              text=True, timeout=300)
        shutil.rmtree(home, ignore_errors=True)
        return proc

    def test_a_process_limit_names_the_count_and_ulimit(self):
        proc = self.as_user('ulimit -u 24; exec "$EZPZ" launch --no-record -n 60 -- sleep 5', self.tmp)
        self.assertNotEqual(proc.returncode, 0, proc.stderr)
        self.assertRegex(proc.stderr, r"cannot fork: Resource temporarily unavailable after \d+ of 60 processes: "
                                      r"ulimit -u is 24 .*lower -n, or raise it")

    def test_unwritable_places_name_the_option_that_moves_them(self):
        env_dir = os.path.join(self.tmp, "venv")  # root's: the user cannot write beside it
        os.makedirs(os.path.join(env_dir, "bin"))
        with open(os.path.join(env_dir, "bin", "activate"), "w"):
            pass
        os.chmod(self.tmp, 0o755)
        proc = self.as_user(f'exec "$EZPZ" tar-env {env_dir}', self.tmp)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("write the archive where you can with -o, e.g. -o", proc.stderr)
        self.assertFalse([n for n in os.listdir(self.tmp) if n != "venv"], "something was left beside the env")
        # ezpz test in / (the user cannot write there): --outdir named, and /outputs, not //outputs.
        # (Debian's python3 has torch: scripts/install-deps.sh installs python3-torch)
        proc = self.as_user('exec "$EZPZ" test --engine python', "/", PATH="/usr/bin:/bin")
        self.assertNotEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("cannot create /outputs", proc.stderr)
        self.assertIn("pass --outdir DIR where you can write", proc.stderr)
        self.assertNotIn("//outputs", proc.stderr)


if __name__ == "__main__":
    main()
