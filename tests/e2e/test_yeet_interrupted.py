"""ezpz yeet on one node when things go wrong: Ctrl-C, a relay or the head killed mid-stream, a
destination moved aside, a parent gone quiet or silent, children that stall (the relays run as
the head would start them, over a fake ssh)."""
import hashlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from ezpz_e2e import EZPZ, TempDirTest, base_env, main, wait_until  # noqa: E402

WORK = "/var/tmp"  # sources live off /tmp, as on a shared filesystem


class Interrupted(TempDirTest):
    def test_sigint_leaves_the_previous_destination(self):
        src = os.path.realpath(__import__("tempfile").mkdtemp(prefix="ezpz-big-", dir=WORK))
        dst_parent = __import__("tempfile").mkdtemp(prefix="ezpz-int-", dir="/tmp")
        try:
            for i in range(8):
                with open(os.path.join(src, f"f{i}"), "wb") as f:
                    f.write(os.urandom(32 << 20))
            dst = os.path.join(dst_parent, "big")
            os.makedirs(dst)
            with open(os.path.join(dst, "old"), "w") as f:
                f.write("previous")
            with open(os.path.join(dst, ".ezpz-yeet"), "w") as f:  # an earlier yeet's copy
                f.write("{}\n")
            proc = subprocess.Popen([EZPZ, "yeet", src, "--dst", dst, "--compress"], env=base_env(),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            # Interrupt once the work is under way (its work directory exists beside the
            # destination), not after a fixed delay: a sanitizer build starts slowly. It is
            # stopped (SIGSTOP) first, so it cannot finish before the signal: the test never skips.
            for _ in range(6000):
                if len(os.listdir(dst_parent)) > 1 or proc.poll() is not None:
                    break
                time.sleep(0.005)
            os.kill(proc.pid, signal.SIGSTOP)
            self.assertIsNone(proc.poll(), "the copy finished before its work directory was seen")
            proc.send_signal(signal.SIGINT)
            os.kill(proc.pid, signal.SIGCONT)
            _, err = proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, 130, err)
            self.assertIn("interrupted", err)
            self.assertEqual(os.listdir(dst_parent), ["big"])
            self.assertEqual(sorted(os.listdir(dst)), [".ezpz-yeet", "old"])
        finally:
            shutil.rmtree(src, ignore_errors=True)
            shutil.rmtree(dst_parent, ignore_errors=True)


class KilledRelay(TempDirTest):
    """A relay killed with SIGKILL leaves no work directory: its watcher (ezpz __yeet-janitor)
    removes it once the relay's end of their pipe closes."""

    @staticmethod
    def janitor_of(staging):
        """The pid of the watcher (ezpz __yeet-janitor DST STAGING) of `staging`, or None."""
        for entry in os.listdir("/proc"):
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except (OSError, ValueError):
                continue
            if len(argv) > 3 and argv[1] == b"__yeet-janitor" and argv[3] == staging.encode():
                return int(entry)
        return None

    def wait_gone(self, path, seconds=20):
        for _ in range(seconds * 20):
            if not os.path.lexists(path):
                return True
            time.sleep(0.05)
        return False

    def test_sigkill_mid_stream_leaves_nothing(self):
        dst = os.path.join(self.tmp, "dst")
        relay = subprocess.Popen([EZPZ, "__yeet-relay", "--host", "n1", "--dst", dst], env=base_env(),
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            self.assertEqual(relay.stdout.readline().strip(), b"EZPZ-READY")
            staging = f"{dst}.ezpz-tmp-{relay.pid}"
            for _ in range(600):
                if os.path.isdir(staging):
                    break
                time.sleep(0.05)
            self.assertTrue(os.path.isdir(staging), os.listdir(self.tmp))
            with open(os.path.join(staging, "partial"), "wb") as f:
                f.write(b"x" * 4096)
            # The SIGKILL below assumes a watcher: wait for it to run (exec'd), not a fixed time.
            self.assertTrue(wait_until(lambda: self.janitor_of(staging) is not None), "no watcher started")
            time.sleep(0.5)  # a window for a wrong watcher to act early (nothing to wait for)
            self.assertTrue(os.path.isdir(staging), "the watcher removed the work directory of a live relay")
        finally:
            relay.kill()
            relay.wait()
            relay.stdin.close()
            relay.stdout.close()
        self.assertTrue(self.wait_gone(staging), os.listdir(self.tmp))
        self.assertEqual(os.listdir(self.tmp), [])

    def random_tree(self, name):
        src = os.path.join(self.tmp, name)
        os.makedirs(src)
        for i in range(8):
            with open(os.path.join(src, f"f{i}"), "wb") as f:
                f.write(os.urandom(16 << 20))
        return src

    def kill_mid_work(self, argv, folder, left):
        """Run ezpz ARGV, SIGKILL it once its work path shows in `folder`, then `folder` must come
        back to `left` (the watcher's doing)."""
        proc = subprocess.Popen([EZPZ, *argv], env=base_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(6000):  # (its lock beside the destination comes first: not yet its work)
            if any(".ezpz-tmp-" in n for n in os.listdir(folder)) or proc.poll() is not None:
                break
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGSTOP)  # it cannot finish before the SIGKILL: the test never skips
        self.assertIsNone(proc.poll(), "the work finished before its work path was seen")
        seen = os.listdir(folder)
        proc.kill()
        proc.wait()
        self.assertTrue(any(".ezpz-tmp-" in n for n in seen), seen)
        for _ in range(400):
            if sorted(os.listdir(folder)) == left:
                break
            time.sleep(0.05)
        self.assertEqual(sorted(os.listdir(folder)), left)

    def test_sigkill_of_the_head_mid_copy_leaves_nothing(self):
        src = self.random_tree("src")
        parent = os.path.join(self.tmp, "nodelocal")
        os.makedirs(os.path.join(parent, "big"))
        self.kill_mid_work(["yeet", src, "--dst", os.path.join(parent, "big"), "--compress"], parent, ["big"])

    def test_sigkill_of_tar_env_mid_pack_leaves_nothing(self):
        src = self.random_tree("env")
        outdir = os.path.join(self.tmp, "out")
        os.makedirs(outdir)
        self.kill_mid_work(["tar-env", src, "-o", os.path.join(outdir, "env.tar.zst")], outdir, [])

    def test_watcher_puts_back_a_destination_moved_aside(self):
        dst = os.path.join(self.tmp, "dst")
        staging = dst + ".ezpz-tmp-1234"
        for d in (staging, staging + ".apply", staging + ".apply.old", staging + ".lift"):
            os.makedirs(os.path.join(d, "sub"))
        with open(os.path.join(staging + ".apply.old", "sub", "kept"), "w") as f:
            f.write("previous copy")
        watcher = subprocess.Popen([EZPZ, "__yeet-janitor", dst, staging], env=base_env(), stdin=subprocess.PIPE)
        time.sleep(0.5)
        self.assertIsNone(watcher.poll())
        self.assertTrue(os.path.isdir(staging))  # nothing happens while its pipe is open
        watcher.stdin.close()
        self.assertEqual(watcher.wait(timeout=20), 0)
        self.assertEqual(os.listdir(self.tmp), ["dst"])
        with open(os.path.join(dst, "sub", "kept")) as f:
            self.assertEqual(f.read(), "previous copy")


class StreamTest(TempDirTest):
    """Feeds a relay's stdin by hand: the stream's magic, frames, keepalives, end and digest."""

    KEEPALIVE = b"\xff\xff\xff\xff"

    def payload(self, size=300_000):
        src = os.path.join(self.tmp, "src")
        os.makedirs(os.path.join(src, "sub"))
        with open(os.path.join(src, "sub", "data.bin"), "wb") as f:
            f.write(os.urandom(size))
        tar = subprocess.run(["tar", "-C", self.tmp, "-cf", "-", "src"], check=True, capture_output=True).stdout
        return subprocess.run(["zstd", "-q", "-c"], input=tar, check=True, capture_output=True).stdout

    def relay(self, dst, silence):
        relay = subprocess.Popen([EZPZ, "__yeet-relay", "--host", "n1", "--dst", dst, "--parent-silence", str(silence)],
                                 env=base_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL)
        self.assertEqual(relay.stdout.readline().strip(), b"EZPZ-READY")
        return relay

    def results(self, relay, timeout=60):
        """host -> (its result, when its line arrived), read to the relay's end without closing its
        stdin (that would be an end of file, not silence)."""
        got, pending, deadline = {}, b"", time.monotonic() + timeout
        while True:
            if time.monotonic() >= deadline:
                relay.kill()
                self.fail(f"the relay did not end within {timeout} s: {got}")
            if select.select([relay.stdout], [], [], 0.2)[0]:
                chunk = os.read(relay.stdout.fileno(), 65536)
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.startswith(b"{"):
                        r = json.loads(line)
                        got[r["host"]] = (r, time.monotonic())
        relay.wait(timeout=timeout)
        relay.stdout.close()
        return got

    def result(self, relay, timeout=30):
        got = self.results(relay, timeout)
        self.assertEqual(len(got), 1, got)
        return next(iter(got.values()))[0]

    @staticmethod
    def frame(data):
        return len(data).to_bytes(4, "big") + data


class ParentSilence(StreamTest):
    """The stream from a relay's parent: keepalive headers (length 0xFFFFFFFF) between frames are
    skipped and keep a quiet parent alive; a parent that sends nothing at all for --parent-silence
    (its node or link died: no end of file ever comes) is given up, and nothing is left."""

    def test_keepalives_keep_a_quiet_parent_and_are_not_data(self):
        data = self.payload()
        dst = os.path.join(self.tmp, "dst")
        relay = self.relay(dst, 3)
        relay.stdin.write(b"EZPZYEET1\n" + self.KEEPALIVE + self.frame(data[:1000]))
        relay.stdin.flush()
        # 6 s with nothing but keepalives: twice the relay's --parent-silence (sent every 0.1 s, so
        # this test would have to be descheduled for 3 s to look silent)
        for _ in range(60):
            time.sleep(0.1)
            relay.stdin.write(self.KEEPALIVE)
            relay.stdin.flush()
        relay.stdin.write(self.frame(data[1000:]) + self.KEEPALIVE + (0).to_bytes(4, "big") +
                          hashlib.sha256(data).digest())
        relay.stdin.close()
        r = self.result(relay)
        self.assertTrue(r["ok"] and r["digest_ok"], r)
        self.assertEqual(relay.returncode, 0)
        self.assertEqual(r["bytes"], len(data))
        with open(os.path.join(self.tmp, "src", "sub", "data.bin"), "rb") as a, \
                open(os.path.join(dst, "sub", "data.bin"), "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_a_silent_parent_is_given_up_and_nothing_is_left(self):
        data = self.payload()
        dst = os.path.join(self.tmp, "dst")
        relay = self.relay(dst, 2)
        start = time.monotonic()
        relay.stdin.write(b"EZPZYEET1\n" + self.frame(data[:len(data) // 2]))
        relay.stdin.flush()  # and then nothing, with the pipe held open: a parent cut off
        r = self.result(relay)
        waited = time.monotonic() - start
        self.assertFalse(r["ok"], r)
        self.assertIn("its parent sent nothing for 2 s", r["error"])
        self.assertEqual(relay.returncode, 1)
        self.assertGreaterEqual(waited, 2)
        self.assertLess(waited, 15)
        relay.stdin.close()  # (only now: an end of file would have ended it another way)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["src"])  # no dst, no work directory


# A relay's way to its children here: runs the ezpz the head asks for in a mount namespace whose
# FAKESSH_ROOT is FAKESSH_BOXES/<host> (that node's own disk); a host in FAKESSH_STUCK says it is
# ready and then never reads (a node stopped or wedged).
FAKE_SSH = """#!/usr/bin/env python3
import os, shlex, sys, time
host, command = sys.argv[-2], sys.argv[-1]
if host in os.environ.get("FAKESSH_STUCK", "").split():
    sys.stdout.write("EZPZ-READY\\n")
    sys.stdout.flush()
    time.sleep(60)
    sys.exit(0)
words = shlex.split(command)
exe, args = words[4], words[8:]
box = os.path.join(os.environ["FAKESSH_BOXES"], host)
os.makedirs(box, exist_ok=True)
os.execvp("unshare", ["unshare", "-m", "--propagation", "private", "sh", "-c",
                      'mount --bind "$1" "$2" && shift 2 && exec "$@"', "fakessh", box, os.environ["FAKESSH_ROOT"],
                      exe, *args])
"""


class RelayChain(StreamTest):
    """A relay with children of its own (fake ssh, real relays): it keeps a child that its own
    parent leaves quiet alive with keepalives, and children that stall cost one stall timeout
    together. Needs root (a mount namespace per fake node), as the cluster tests."""

    def middle(self, children, stall, silence, stuck=""):
        root, boxes = os.path.join(self.tmp, "root"), os.path.join(self.tmp, "boxes")
        os.makedirs(root, exist_ok=True)
        os.makedirs(boxes, exist_ok=True)
        fake = self.write("bin/fakessh", FAKE_SSH, 0o755)
        env = base_env(FAKESSH_ROOT=root, FAKESSH_BOXES=boxes, FAKESSH_STUCK=stuck)
        relay = subprocess.Popen([EZPZ, "__yeet-relay", "--host", "n1", "--children", children, "--dst",
                                  os.path.join(root, "dst"), "--ssh-command", fake, "--exe", EZPZ,
                                  "--stall-timeout", str(stall), "--parent-silence", str(silence)],
                                 env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.assertEqual(relay.stdout.readline().strip(), b"EZPZ-READY")
        return relay, root, boxes

    def test_a_relay_keeps_a_quiet_child_alive(self):
        if os.geteuid() != 0:
            self.fail("needs root for the fake nodes' mount namespaces: run the e2e tests as root (CI does)")
        data = self.payload()
        # The child's --parent-silence is max(2, 8 + 10) = 18 s; it hears nothing but the middle
        # relay's own keepalives for 20 s (the middle hears ours, every 0.2 s, which it does not
        # forward). The stall timeout of 8 s is the child's time to start and say it is ready.
        relay, root, boxes = self.middle("n2", 8, 5)
        relay.stdin.write(b"EZPZYEET1\n" + self.frame(data[:1000]))
        relay.stdin.flush()
        for _ in range(100):
            time.sleep(0.2)
            relay.stdin.write(self.KEEPALIVE)
            relay.stdin.flush()
        relay.stdin.write(self.frame(data[1000:]) + (0).to_bytes(4, "big") + hashlib.sha256(data).digest())
        relay.stdin.close()
        got = {host: r for host, (r, _) in self.results(relay).items()}
        self.assertEqual(sorted(got), ["n1", "n2"], got)
        for host in ("n1", "n2"):
            self.assertTrue(got[host]["ok"] and got[host]["digest_ok"], got[host])
        with open(os.path.join(self.tmp, "src", "sub", "data.bin"), "rb") as a, \
                open(os.path.join(boxes, "n2", "dst", "sub", "data.bin"), "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_stalled_children_cost_one_stall_timeout_together(self):
        if os.geteuid() != 0:
            self.fail("needs root for the fake nodes' mount namespaces: run the e2e tests as root (CI does)")
        # a frame well over the 1 MiB a child's pipe holds (sys::widen_pipe): neither stuck child can take it
        data = self.payload(3_000_000)
        # (a stall timeout of 8 s: the children's start under a sanitizer on a busy machine fits
        # within it, and one after the other would take at least 16 s)
        relay, root, boxes = self.middle("n2,n3", 8, 60, stuck="n2 n3")
        start = time.monotonic()
        relay.stdin.write(b"EZPZYEET1\n" + self.frame(data) + (0).to_bytes(4, "big") + hashlib.sha256(data).digest())
        relay.stdin.close()
        got = self.results(relay)
        self.assertEqual(sorted(got), ["n1", "n2", "n3"], got)
        me, at = got["n1"]  # the middle's own result: once both stalled children are dropped
        self.assertTrue(me["ok"] and me["digest_ok"], me)
        self.assertGreaterEqual(at - start, 7.5)
        self.assertLess(at - start, 14.0, "the two stalled children were waited for one after the other")
        for host in ("n2", "n3"):
            self.assertFalse(got[host][0]["ok"], got[host])
            self.assertIn("stalled: took no data for 8 s", got[host][0]["error"])


if __name__ == "__main__":
    main(verbosity=2)
