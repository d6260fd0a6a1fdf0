"""Completions in real interactive shells: bash, zsh and fish run on a pseudo-terminal, load
ezpz's completion the way a user does, and get a line typed with TAB in it. `ezpz` there is a
shell function that prints the words it gets, so Enter shows what TAB made of the line."""
import fcntl
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import termios
import time

sys.path.insert(0, os.path.dirname(__file__))
from ezpz_e2e import EZPZ, TempDirTest, main  # noqa: E402


class Shell:
    """An interactive shell on a pty."""

    def __init__(self, argv, cwd, env):
        self.master, slave = pty.openpty()
        os.set_blocking(self.master, False)
        def controlling_tty():  # a session of its own, the pty its terminal (fish insists)
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env,
                                     preexec_fn=controlling_tty)
        os.close(slave)
        self.seen = ""

    def send(self, text):
        os.write(self.master, text.encode())

    def expect(self, pattern, seconds=60):
        """Read until `pattern` matches what the shell wrote since the last match; return the match."""
        deadline = time.monotonic() + seconds
        while True:
            m = re.search(pattern, self.seen)
            if m:
                self.seen = self.seen[m.end():]
                return m
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {pattern!r} within {seconds} s; the shell wrote: {self.seen[-2000:]!r}")
            if select.select([self.master], [], [], left)[0]:
                try:
                    chunk = os.read(self.master, 65536).decode(errors="replace")
                except OSError:
                    chunk = ""
                if not chunk and self.proc.poll() is not None:
                    raise AssertionError(f"the shell exited; it wrote: {self.seen[-2000:]!r}")
                self.seen += chunk

    def typed(self, line):
        """Type `line` (TABs included) and Enter; the words `ezpz` got."""
        self.send(line + "\r")
        return self.expect(r"ARGS\[(.*?)\]END").group(1)

    def close(self):
        self.proc.kill()
        self.proc.wait()
        os.close(self.master)


class Completion(TempDirTest):
    def setUp(self):
        super().setUp()
        for sh in ("bash", "zsh", "fish"):  # installed by scripts/install-deps.sh: never skipped
            self.assertIsNotNone(shutil.which(sh), f"{sh} is missing: run scripts/install-deps.sh")
        os.makedirs(os.path.join(self.tmp, "my dir"))
        self.write("my file.txt", "x")
        self.write("metrics one.jsonl", "{}\n")
        self.write("bin/zzprobe-cmd", "#!/bin/sh\n", 0o755)  # a command with a completion of its own
        self.env = {"PATH": os.path.join(self.tmp, "bin") + ":" + os.environ["PATH"], "HOME": self.tmp, "TERM": "dumb", "LANG": "C.UTF-8",
                    "EZPZ_BIN": EZPZ}
        self.shells = []

    def tearDown(self):
        for s in self.shells:
            s.close()
        super().tearDown()

    def shell(self, argv, setup):
        s = Shell(argv, self.tmp, self.env)
        self.shells.append(s)
        s.send(setup + "\r")
        s.send("echo READY\r")
        s.expect(r"\nREADY")
        return s

    def bash(self):
        return self.shell(["bash", "--norc", "--noprofile", "-i"],
                          'PS1="$ "; source <("$EZPZ_BIN" completions bash); '
                          'ezpz() { printf "ARGS["; printf "<%s>" "$@"; printf "]END\\n"; }')

    def zsh(self, how):
        load = {"source": 'source <("$EZPZ_BIN" completions zsh)',
                "fpath": 'mkdir -p ~/zf && "$EZPZ_BIN" completions zsh > ~/zf/_ezpz && fpath=(~/zf $fpath) && '
                         'autoload -U compinit && compinit -u -D'}[how]
        first = "" if how == "fpath" else "autoload -U compinit; compinit -u -D; "
        return self.shell(["zsh", "-f", "-i"],
                          f'PS1="$ "; {first}{load}; unsetopt beep; '
                          'ezpz() { printf "ARGS["; printf "<%s>" "$@"; printf "]END\\n"; }')

    def fish(self):
        return self.shell(["fish", "--no-config", "-i"],
                          'function fish_prompt; echo -n "> "; end; "$EZPZ_BIN" completions fish | source; '
                          'function ezpz; printf "ARGS["; printf "<%s>" $argv; printf "]END\\n"; end; '
                          'complete -c zzprobe-cmd -l frobnicate -d "its own option"')

    def test_zsh_sourced_and_from_fpath(self):
        for how in ("source", "fpath"):
            with self.subTest(how=how):
                z = self.zsh(how)
                self.assertEqual(z.typed("ezpz la\t-- true"), "<launch><--><true>")
                self.assertEqual(z.typed("ezpz launch --launc\tsr\t-- true"), "<launch><--launcher><srun><--><true>")
                self.assertEqual(z.typed("ezpz completions fi\t"), "<completions><fish>")
                self.assertEqual(z.typed("ezpz kill --signal IN\t"), "<kill><--signal><INT>")
                self.assertEqual(z.typed("ezpz env --machine pol\t"), "<env><--machine><polaris>")
                self.assertNotIn("can only be called from completion function", z.seen)

    def test_bash(self):
        b = self.bash()
        self.assertEqual(b.typed("ezpz la\t-- true"), "<launch><--><true>")
        self.assertEqual(b.typed("ezpz yeet my\\ f\t"), "<yeet><my file.txt>")
        self.assertEqual(b.typed("ezpz launch --machine po\t-- true"), "<launch><--machine><polaris><--><true>")
        self.assertEqual(b.typed("ezpz launch --machine=po\t-- true"), "<launch><--machine=polaris><--><true>")
        self.assertEqual(b.typed("ezpz plot metr\t"), "<plot><metrics one.jsonl>")
        self.assertEqual(b.typed("ezpz completions ba\t"), "<completions><bash>")
        self.assertEqual(b.typed("ezpz kill --signal IN\t"), "<kill><--signal><INT>")
        self.assertEqual(b.typed("ezpz env --machine pol\t"), "<env><--machine><polaris>")

    def test_fish(self):
        f = self.fish()
        self.assertEqual(f.typed("ezpz la\t-- true"), "<launch><--><true>")
        self.assertEqual(f.typed("ezpz launch --launcher sr\t-- true"), "<launch><--launcher><srun><--><true>")
        self.assertEqual(f.typed("ezpz completions ba\t"), "<completions><bash>")
        # positional files, and after -- the command's own completion (fish's for ls)
        self.assertEqual(f.typed("ezpz yeet my\\ f\t"), "<yeet><my file.txt>")
        self.assertEqual(f.typed("ezpz tar-env my\\ d\t"), "<tar-env><my dir/>")
        self.assertEqual(f.typed("ezpz plot metr\t"), "<plot><metrics one.jsonl>")
        self.assertEqual(f.typed("ezpz launch -- zzprobe-c\t"), "<launch><--><zzprobe-cmd>")
        self.assertEqual(f.typed("ezpz launch -n 2 -- zzprobe-cmd --frob\t"), "<launch><-n><2><--><zzprobe-cmd><--frobnicate>")
        self.assertEqual(f.typed("ezpz kill --signal IN\t"), "<kill><--signal><INT>")
        self.assertEqual(f.typed("ezpz env --machine pol\t"), "<env><--machine><polaris>")


if __name__ == "__main__":
    main(verbosity=2)
