"""ezpz yeet removes what it replaces or leaves, whatever the tree (deeper than PATH_MAX,
read-only, symlinks to elsewhere), and no special file in a source can make it hang."""
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from ezpz_e2e import EZPZ, TempDirTest, base_env, main, run, wait_until  # noqa: E402

DEPTH = 3000  # levels of "dd/": 9000 characters, past PATH_MAX (4096)


def make_deep(top, outside=None):
    """A chain of DEPTH directories under `top`, built through descriptors (no path is ever
    longer than a name), with read-only directories and symlinks to `outside` on the way."""
    os.makedirs(top, exist_ok=True)
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for level in range(DEPTH):
            if level % 1000 == 0:
                if outside:
                    os.symlink(outside, "to-outside", dir_fd=fd)
                os.mkdir("ro", dir_fd=fd)
                os.chmod("ro", 0o555, dir_fd=fd)
                os.mkdir("none", dir_fd=fd)
                os.chmod("none", 0o000, dir_fd=fd)
            os.mkdir("dd", dir_fd=fd)
            below = os.open("dd", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = below
        os.close(os.open("bottom", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


class Removal(TempDirTest):
    def setUp(self):
        super().setUp()
        self.node = os.path.join(self.tmp, "node")  # the node-local folder that holds DST
        os.makedirs(self.node)
        self.dst = os.path.join(self.node, "dst")
        self.outside = os.path.join(self.tmp, "outside")
        os.makedirs(self.outside)
        with open(os.path.join(self.outside, "keep"), "w") as f:
            f.write("kept")

    def tearDown(self):
        # Python's rmtree recurses once per level: coreutils' rm walks any depth.
        subprocess.run(["rm", "-rf", self.tmp], check=False)
        super().tearDown()

    def source(self, files=3):
        src = os.path.join(self.tmp, "src")
        os.makedirs(os.path.join(src, "sub"), exist_ok=True)
        for i in range(files):
            with open(os.path.join(src, "sub", f"f{i}"), "w") as f:
                f.write(f"file {i}\n")
        return src

    def assert_clean(self):
        self.assertEqual(os.listdir(self.node), ["dst"], "work paths left beside the destination")
        with open(os.path.join(self.outside, "keep")) as f:
            self.assertEqual(f.read(), "kept")

    def test_reyeet_replaces_a_tree_deeper_than_path_max(self):
        make_deep(self.dst, self.outside)
        src = self.source()
        for extra in ([], ["--copy"]):
            with self.subTest(method=extra or "sync"):
                # (--force: the deep tree is not a copy of yeet's)
                proc = run(["yeet", "--src", src, "--dst", self.dst, "--force", *extra], base_env(), check=0)
                self.assertNotIn("warning", proc.stderr)
                self.assertEqual(sorted(os.listdir(self.dst)), [".ezpz-yeet", "sub"])
                self.assertEqual(sorted(os.listdir(os.path.join(self.dst, "sub"))), ["f0", "f1", "f2"])
                self.assert_clean()
                make_deep(self.dst, self.outside)  # again, for the next method

    def test_a_source_deeper_than_path_max_fails_and_leaves_nothing(self):
        src = self.source()
        make_deep(os.path.join(src, "deep"))
        os.makedirs(self.dst)
        with open(os.path.join(self.dst, "old"), "w") as f:
            f.write("previous")
        proc = run(["yeet", "--src", src, "--dst", self.dst, "--copy", "--force"], base_env(), check=1)
        self.assertIn("File name too long", proc.stderr)
        self.assertNotIn("warning", proc.stderr)
        self.assertEqual(os.listdir(self.dst), ["old"])
        self.assert_clean()

    def test_the_next_run_sweeps_a_dead_runs_deep_work_directory(self):
        dead = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True, check=True).stdout.strip()
        left = f"{self.dst}.ezpz-tmp-{dead}"
        make_deep(left, self.outside)
        os.chmod(left, 0o555)
        run(["yeet", "--src", self.source(), "--dst", self.dst], base_env(), check=0)
        self.assert_clean()

    def stopped_mid_copy(self):
        """`ezpz yeet` stopped (SIGSTOP: it cannot finish first) in the middle of its copy, with a
        tree deeper than PATH_MAX put in its work directory; the process, stopped."""
        src = self.source(files=4000)
        os.makedirs(self.dst)
        proc = subprocess.Popen([EZPZ, "yeet", "--src", src, "--dst", self.dst, "--copy"], env=base_env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        staging = f"{self.dst}.ezpz-tmp-{proc.pid}"
        try:
            self.assertTrue(wait_until(lambda: os.path.isdir(staging) or proc.poll() is not None, 60, step=0.001))
            os.kill(proc.pid, signal.SIGSTOP)
            self.assertIsNone(proc.poll(), "the copy finished before it could be stopped")
            self.assertTrue(os.path.isdir(staging))
            make_deep(os.path.join(staging, "deep"), self.outside)
        except BaseException:
            proc.kill()
            proc.communicate()
            raise
        return proc

    def test_sighup_ends_with_129(self):
        proc = self.stopped_mid_copy()
        os.kill(proc.pid, signal.SIGHUP)
        os.kill(proc.pid, signal.SIGCONT)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 129, err)
        self.assertIn("interrupted", err)
        self.assertEqual(os.listdir(self.dst), [])
        self.assert_clean()

    def test_tar_env_ends_with_128_plus_the_signal(self):
        src = self.source(files=4000)
        out = os.path.join(self.node, "env.tar.zst")
        os.makedirs(self.node, exist_ok=True)
        for sig, code in ((signal.SIGTERM, 143), (signal.SIGINT, 130)):
            proc = subprocess.Popen([EZPZ, "tar-env", src, "-o", out], env=base_env(),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            work = f"{out}.ezpz-tmp-{proc.pid}."  # its private work directory (mkdtemp)
            try:
                self.assertTrue(wait_until(lambda: any(n.startswith(os.path.basename(work)) for n in os.listdir(self.node))
                                           or proc.poll() is not None, 60, step=0.001))
                os.kill(proc.pid, signal.SIGSTOP)  # it cannot finish before the signal
                self.assertIsNone(proc.poll(), "tar-env finished before it could be stopped")
            except BaseException:
                proc.kill()
                proc.communicate()
                raise
            os.kill(proc.pid, sig)
            os.kill(proc.pid, signal.SIGCONT)
            _, err = proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, code, err)
            self.assertTrue(wait_until(lambda: os.listdir(self.node) == [], 30), os.listdir(self.node))

    def test_sigkill_mid_copy_the_watcher_removes_a_deep_work_directory(self):
        proc = self.stopped_mid_copy()
        proc.kill()
        proc.communicate()
        self.assertTrue(wait_until(lambda: os.listdir(self.node) == ["dst"], 60), os.listdir(self.node))
        self.assertEqual(os.listdir(self.dst), [])  # the destination as it was
        self.assert_clean()

    def test_an_interrupted_run_removes_its_deep_work_directory(self):
        proc = self.stopped_mid_copy()
        os.kill(proc.pid, signal.SIGTERM)
        os.kill(proc.pid, signal.SIGCONT)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 143, err)  # 128 + SIGTERM, as launch
        self.assertNotIn("warning", err)
        self.assertEqual(os.listdir(self.dst), [])
        self.assert_clean()  # removed by the run itself, before it ended


class RemovalThatFails(TempDirTest):
    """A previous tree that cannot be removed (run as an unprivileged user, part of it is
    root's): the new tree is in place, and yeet says what is left and to remove it by hand."""

    def test_a_removal_that_fails_is_a_warning_naming_the_path(self):
        self.assertEqual(os.geteuid(), 0, "needs root (as the cluster tests) to make a tree its user cannot remove")
        nobody = 65534
        os.chmod(self.tmp, 0o755)
        node, src = os.path.join(self.tmp, "node"), os.path.join(self.tmp, "src")
        dst = os.path.join(node, "dst")
        for d in (node, src, os.path.join(dst, "locked"), os.path.join(self.tmp, "home")):
            os.makedirs(d)
        with open(os.path.join(src, "new"), "w") as f:
            f.write("new")
        with open(os.path.join(dst, "locked", "roots"), "w") as f:
            f.write("root's file")
        for d in (node, src, dst, os.path.join(src, "new"), os.path.join(self.tmp, "home")):
            os.chown(d, nobody, nobody)

        def drop():
            os.setgroups([])
            os.setgid(nobody)
            os.setuid(nobody)

        proc = subprocess.run([EZPZ, "yeet", "--src", src, "--dst", dst, "--force"],
                              env=base_env(HOME=os.path.join(self.tmp, "home")),
                              capture_output=True, text=True, timeout=60, preexec_fn=drop)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sorted(os.listdir(dst)), [".ezpz-yeet", "new"])
        left = [n for n in os.listdir(node) if n != "dst"]
        self.assertEqual(len(left), 1, left)  # the previous tree, what could not be removed of it
        self.assertIn("warning", proc.stderr)
        self.assertIn(os.path.join(node, left[0]), proc.stderr)
        self.assertIn("Permission denied", proc.stderr)
        self.assertIn("by hand (rm -rf", proc.stderr)
        # The next run (as root, who replaces another user's tree only with --force, and only below
        # a parent no other user owns) sweeps it: its process is gone.
        os.chown(node, 0, 0)
        run(["yeet", "--src", src, "--dst", dst, "--force"], base_env(), check=0)
        self.assertEqual(os.listdir(node), ["dst"])


class SpecialFiles(TempDirTest):
    """A venv-shaped source whose bin/activate is a FIFO (no writer: opening it for reading
    would block for ever), or a symlink to one. yeet copies such a tree without the FIFO, as
    cp and tar users expect a tree to be copied, with a warning naming it; never opened."""

    def setUp(self):
        super().setUp()
        self.src = os.path.join(self.tmp, "venv")
        os.makedirs(os.path.join(self.src, "bin"))
        with open(os.path.join(self.src, "pyvenv.cfg"), "w") as f:
            f.write("home = /usr/bin\n")
        with open(os.path.join(self.src, "bin", "python"), "w") as f:
            f.write(f"#!{self.src}/bin/python3\n")
        self.node = os.path.join(self.tmp, "node")
        os.makedirs(self.node)
        self.dst = os.path.join(self.node, "dst")

    def yeet(self, *extra):
        # run() has a timeout: a hang fails the test.
        return run(["yeet", "--src", self.src, "--dst", self.dst, *extra], base_env())

    def test_fifo_activate_is_skipped_with_a_warning(self):
        os.mkfifo(os.path.join(self.src, "bin", "activate"))
        for extra in ([], ["--copy"], ["--compress"]):
            with self.subTest(method=extra or "sync"):
                proc = self.yeet(*extra)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                if extra != ["--compress"]:
                    self.assertIn("not copied (the first: bin/activate)", proc.stderr)
                self.assertFalse(os.path.lexists(os.path.join(self.dst, "bin", "activate")))
                self.assertTrue(os.path.isfile(os.path.join(self.dst, "bin", "python")))
                self.assertEqual(os.listdir(self.node), ["dst"])

    def test_activate_linked_to_a_fifo_is_never_opened(self):
        fifo = os.path.join(self.tmp, "elsewhere-fifo")
        os.mkfifo(fifo)
        os.symlink(fifo, os.path.join(self.src, "bin", "activate"))
        for extra in ([], ["--copy"]):
            with self.subTest(method=extra or "sync"):
                proc = self.yeet(*extra)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual(os.readlink(os.path.join(self.dst, "bin", "activate")), fifo)  # a link is a link
                self.assertEqual(os.listdir(self.node), ["dst"])

    def test_an_archive_with_a_fifo_activate_ends_promptly(self):
        """The archive case: refused at extraction, or extracted and never read; never a hang."""
        os.mkfifo(os.path.join(self.src, "bin", "activate"))
        archive = os.path.join(self.tmp, "venv.tar.gz")
        subprocess.run(["tar", "-czf", archive, "-C", self.tmp, "venv"], check=True)
        proc = run(["yeet", "--src", archive, "--dst", self.dst], base_env())
        self.assertIn(proc.returncode, (0, 1), proc.stderr)
        self.assertEqual(os.listdir(self.node), ["dst"] if proc.returncode == 0 else [])


if __name__ == "__main__":
    main()
