"""The yeet relay (`ezpz __yeet-relay`) under valgrind on a small transfer: no memory errors and no
definite leaks. A fake ssh command runs the relay that the head asks for under valgrind, in a mount
namespace where the destination's parent is the fake node's own directory. Needs root (as the
cluster tests) and valgrind (scripts/install-deps.sh); registered for dynamic builds without
sanitizers only (valgrind cannot replace malloc in a static binary)."""
import glob
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from ezpz_e2e import EZPZ, TempDirTest, base_env, main  # noqa: E402

# The head starts `sh -c SCRIPT ezpz EXE DIGEST SIZE SHIP ARGS...`; run EXE ARGS... under valgrind.
FAKE_SSH = """#!/usr/bin/env python3
import os, shlex, sys
host, command = sys.argv[-2], sys.argv[-1]
words = shlex.split(command)
assert words[:2] == ["sh", "-c"] and words[3] == "ezpz", words[:4]
exe, args = words[4], words[8:]
box = os.path.join(os.environ["FAKESSH_BOXES"], host)
os.makedirs(box, exist_ok=True)
log = os.path.join(os.environ["FAKESSH_BOXES"], host + ".valgrind.%p.log")
valgrind = ["valgrind", "--error-exitcode=99", "--leak-check=full", "--errors-for-leak-kinds=definite",
            "--child-silent-after-fork=yes", "--log-file=" + log, exe, *args]
os.execvp("unshare", ["unshare", "-m", "--propagation", "private", "sh", "-c",
                      'mount --bind "$1" "$2" && shift 2 && exec "$@"', "fakessh", box, os.environ["FAKESSH_ROOT"],
                      *valgrind])
"""


class RelayUnderValgrind(TempDirTest):
    def test_small_transfer_is_valgrind_clean(self):
        self.assertIsNotNone(shutil.which("valgrind"), "valgrind is missing: run scripts/install-deps.sh")
        root = os.path.join(self.tmp, "root")
        boxes = os.path.join(self.tmp, "boxes")
        os.makedirs(root)
        os.makedirs(boxes)
        self.write("bin/fakessh", FAKE_SSH, 0o755)
        for i in range(20):
            self.write(f"src/pkg/m{i}.py", f"x = {i}\n" * (i * 50 + 1))
        os.symlink("pkg/m1.py", os.path.join(self.tmp, "src", "link"))
        hostfile = self.write("hosts", "n1\nn2\n")
        env = base_env(FAKESSH_ROOT=root, FAKESSH_BOXES=boxes, EZPZ_MACHINE="local")
        proc = subprocess.run([EZPZ, "yeet", os.path.join(self.tmp, "src"), "--dst", os.path.join(root, "dst"),
                               "--hostfile", hostfile, "--no-hsn", "--fanout", "1", "--ssh-command",
                               os.path.join(self.tmp, "bin/fakessh"), "--json"],
                              env=env, capture_output=True, text=True, timeout=600)
        logs = sorted(glob.glob(os.path.join(boxes, "*.valgrind.*.log")))
        texts = {}
        for path in logs:
            with open(path) as f:
                texts[path] = f.read()
        self.assertEqual(proc.returncode, 0, proc.stderr + "\n".join(texts.values()))
        report = json.loads(proc.stdout)
        self.assertEqual(sorted(n["host"] for n in report["remote"] if n["ok"] and n["digest_ok"]), ["n1", "n2"])
        # n1 relays to n2 (fan-out 1): two relays ran under valgrind, each clean.
        self.assertEqual(len(logs), 2, logs)
        for path, text in texts.items():
            self.assertIn("ERROR SUMMARY: 0 errors", text, f"{path}:\n{text}")
            self.assertNotIn("definitely lost: 1", text)
        for host in ("n1", "n2"):
            with open(os.path.join(boxes, host, "dst", "pkg", "m19.py")) as f:
                self.assertEqual(f.read(), "x = 19\n" * 951)
        print(f"relay under valgrind: {len(logs)} relays clean", file=sys.stderr)


if __name__ == "__main__":
    main()
