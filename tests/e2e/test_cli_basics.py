"""The binary's front door: version, help, exit codes, colour, start-up discipline."""
import os
import platform
import re
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from ezpz_e2e import EZPZ, TempDirTest, base_env, main, run  # noqa: E402


def elf_interpreter(path):
    """Whether the 64-bit little-endian ELF at path names a dynamic loader (PT_INTERP)."""
    with open(path, "rb") as f:
        head = f.read(64)
        phoff, = struct.unpack_from("<Q", head, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    return any(struct.unpack_from("<I", table, i * phentsize)[0] == 3 for i in range(phnum))


class Basics(TempDirTest):
    def test_version(self):
        # What a bug report needs: version, commit, build date, linkage, arch; -V the same.
        proc = run(["--version"], check=0)
        m = re.fullmatch(r"ezpz \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}(\+dirty)?|unknown), "
                         r"built (\d{4}-\d\d-\d\d), (static|dynamic), (\w+)\)\n", proc.stdout)
        self.assertTrue(m, proc.stdout)
        self.assertEqual(run(["-V"], check=0).stdout, proc.stdout)
        self.assertEqual(m.group(4), "dynamic" if elf_interpreter(EZPZ) else "static")
        self.assertEqual(m.group(5), platform.machine())
        self.assertEqual(run(["-v", "-V"], check=0).stdout, proc.stdout)

    def test_version_touches_no_config_or_scheduler(self):
        # A broken config, a broken scheduler override and a missing hostfile break launch...
        cfg = self.write("bad.toml", "this is not toml [[[")
        env = base_env(EZPZ_CONFIG=cfg, EZPZ_SCHEDULER="lsf", PBS_NODEFILE="/nonexistent")
        run(["launch", "--dry-run", "--", "x"], env, check=2)
        # ...but not --version, --help or completions.
        self.assertEqual(run(["--version"], env, check=0).stderr, "")
        run(["--help"], env, check=0)
        run(["completions", "bash"], env, check=0)

    def test_test_without_the_companion_is_127(self):
        # A lone copy (what every build has without libtorch beside it) asked for the C++ engine: 127,
        # one line, and help says so (tests/e2e/test_ezpz_test_python.py runs its Python engine).
        lone = os.path.join(self.tmp, "bin", "ezpz")
        os.makedirs(os.path.dirname(lone))
        shutil.copy(EZPZ, lone)
        proc = subprocess.run([lone, "test", "-n", "2", "--engine", "cpp"], env=base_env(PATH="/usr/bin:/bin"),
                              capture_output=True, text=True, timeout=30)
        self.assertEqual(proc.returncode, 127, proc.stderr)
        self.assertIn("needs the companion program ezpz-test-train, which is not installed", proc.stderr)
        self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)
        self.assertIn("exit 127 when neither is there", " ".join(run(["--help"], check=0).stdout.split()))

    def test_tar_env_without_an_env_names_its_own_form(self):
        proc = run(["tar-env"], base_env(), check=2)
        self.assertIn("(ezpz tar-env PATH)", proc.stderr)

    def test_help(self):
        self.assertIn("launch", run(["--help"], check=0).stdout)
        out = run(["help", "launch"], check=0).stdout
        self.assertIn("Usage: ezpz launch", out)
        self.assertIn("--dry-run", out)
        self.assertEqual(out, run(["launch", "--help"], check=0).stdout)

    def test_usage_errors_exit_2(self):
        for args in (["bogus"], ["--bogus"], ["launch", "--launcher", "x", "--", "y"], ["launch", "-n", "two"],
                     ["completions", "tcsh"], []):
            with self.subTest(args=args):
                proc = run(args, check=2)
                self.assertNotEqual(proc.stderr, "")

    def test_no_command_exits_2(self):
        proc = run(["launch", "--dry-run"], check=2)
        self.assertIn("no command to launch", proc.stderr)

    def test_colour_only_on_a_tty_and_never_with_no_color(self):
        def on_tty(extra):
            env = base_env(TERM="xterm", **extra)
            cmd = f"{EZPZ} launch --launcher nope -- x"
            return subprocess.run(["script", "-qec", cmd, "/dev/null"], env=env, capture_output=True,
                                  text=True, timeout=30).stdout
        self.assertIn("\x1b[", on_tty({}))
        self.assertNotIn("\x1b[", on_tty({"NO_COLOR": "1"}))
        self.assertNotIn("\x1b[", run(["launch", "--launcher", "nope", "--", "x"],
                                      base_env(TERM="xterm")).stderr)

    def test_colour_per_stream(self):
        # `ezpz doctor > log` on a terminal: doctor writes stdout, which is a file: no escapes
        # there (it used to ask stderr); with --color=always (before or after the command) there are.
        def doctor_log(*flags, **extra):
            log = os.path.join(self.tmp, "doctor.log")
            cmd = " ".join([EZPZ, *flags[:1], "doctor", *flags[1:], ">", log])
            subprocess.run(["script", "-qec", cmd, "/dev/null"], env=base_env(TERM="xterm", **extra),
                           capture_output=True, text=True, timeout=60)
            with open(log) as f:
                return f.read()
        self.assertIn("[ OK ]", doctor_log(""))
        self.assertNotIn("\x1b[", doctor_log(""))
        self.assertIn("\x1b[", doctor_log("--color=always"))
        self.assertIn("\x1b[", doctor_log("", "--color", "always"))
        self.assertIn("\x1b[", doctor_log("", FORCE_COLOR="1"))
        self.assertIn("\x1b[", doctor_log("", CLICOLOR_FORCE="1", NO_COLOR="1"))
        # Off a terminal: forced on, or never even on one.
        bad = ["launch", "--launcher", "nope", "--", "x"]
        self.assertIn("\x1b[", run(bad, base_env(FORCE_COLOR="1")).stderr)
        self.assertIn("\x1b[", run(["--color", "always", *bad], base_env()).stderr)
        cmd = f"{EZPZ} --color=never launch --launcher nope -- x"
        self.assertNotIn("\x1b[", subprocess.run(["script", "-qec", cmd, "/dev/null"], env=base_env(TERM="xterm"),
                                                  capture_output=True, text=True, timeout=30).stdout)
        proc = run(["--color", "sometimes", "doctor"], check=2)
        self.assertIn("--color", proc.stderr)


if __name__ == "__main__":
    main(verbosity=2)
