"""What yeet may replace at its destination, and the lines it prints to paste (issue #27)."""
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from ezpz_e2e import EZPZ, TempDirTest, base_env, main, run  # noqa: E402

PYTHON = "/usr/bin/python3"  # Debian's, with python3-venv
NOBODY = 65534


def listing(path):
    return sorted(os.listdir(path))


def text(path):
    with open(path) as f:
        return f.read()


class Destination(TempDirTest):
    def setUp(self):
        super().setUp()
        self.src = os.path.join(self.tmp, "src")
        os.makedirs(os.path.join(self.src, "sub"))
        with open(os.path.join(self.src, "sub", "data"), "w") as f:
            f.write("new\n")
        self.parent = tempfile.mkdtemp(prefix="ezpz-dst-", dir="/tmp")
        self.env = base_env(EZPZ_HOME=os.path.join(self.tmp, "home"))

    def tearDown(self):
        shutil.rmtree(self.parent, ignore_errors=True)
        super().tearDown()

    def yeet(self, dst, *extra, check=0, env=None):
        return run(["yeet", self.src, "--dst", dst, *extra], env or self.env, check=check)

    def test_a_file_at_the_destination_is_refused_and_kept(self):
        dst = os.path.join(self.parent, "afile")
        with open(dst, "w") as f:
            f.write("mine\n")
        for extra in ([], ["--dry-run"], ["--copy"], ["--compress"]):
            with self.subTest(extra=extra):
                proc = self.yeet(dst, *extra, check=1)
                self.assertEqual(proc.stderr.count("\n"), 1, proc.stderr)
                self.assertIn(f"{dst} is a regular file", proc.stderr)
                self.assertIn("--force", proc.stderr)
                self.assertEqual(text(dst), "mine\n")
                self.assertEqual(listing(self.parent), ["afile"], "work left beside the destination")
        # --force: the user means it.
        self.yeet(dst, "--force")
        self.assertEqual(listing(dst), [".ezpz-yeet", "sub"])

    def test_a_link_at_the_destination_is_refused_and_its_target_untouched(self):
        target = os.path.join(self.tmp, "target")
        os.makedirs(target)
        with open(os.path.join(target, "keep"), "w") as f:
            f.write("kept")
        dst = os.path.join(self.parent, "link")
        os.symlink(target, dst)
        proc = self.yeet(dst, check=1)
        self.assertIn(f"{dst} is a symbolic link", proc.stderr)
        self.assertTrue(os.path.islink(dst))
        self.assertEqual(listing(target), ["keep"])

    def test_a_directory_yeet_did_not_make_is_refused(self):
        dst = os.path.join(self.parent, "data")
        os.makedirs(dst)
        with open(os.path.join(dst, "results.csv"), "w") as f:
            f.write("1,2\n")
        proc = self.yeet(dst, check=1)
        self.assertIn(f"{dst} is a directory yeet did not make", proc.stderr)
        self.assertIn("--force", proc.stderr)
        self.assertEqual(listing(dst), ["results.csv"])
        self.assertEqual(listing(self.parent), ["data"])

    def test_its_own_copies_envs_and_empty_directories_are_replaced(self):
        empty = os.path.join(self.parent, "empty")
        os.makedirs(empty)
        self.yeet(empty)
        self.assertEqual(listing(empty), [".ezpz-yeet", "sub"])
        marker = json.loads(text(os.path.join(empty, ".ezpz-yeet")))
        self.assertEqual(marker["source"], self.src)
        # yeet's own copy, again (the marker says so): replaced without --force.
        with open(os.path.join(self.src, "sub", "data"), "w") as f:
            f.write("newer\n")
        self.yeet(empty)
        self.assertEqual(text(os.path.join(empty, "sub", "data")), "newer\n")
        # An env someone made by hand (pyvenv.cfg): what yeet is for, replaced.
        venv = os.path.join(self.parent, "venv")
        subprocess.run([PYTHON, "-m", "venv", "--without-pip", venv], check=True)
        self.yeet(venv)
        self.assertEqual(listing(venv), [".ezpz-yeet", "sub"])

    def test_another_users_destination_names_its_owner_and_a_path_of_ones_own(self):
        self.assertEqual(os.geteuid(), 0, "needs root (as the cluster tests) to be two users")
        shared = os.path.join(self.parent, "shared")  # a /tmp of its own: sticky, everyone's
        os.makedirs(shared)
        os.chmod(shared, 0o1777)
        os.chmod(self.parent, 0o755)
        dst = os.path.join(shared, "venv")
        os.makedirs(dst)
        with open(os.path.join(dst, ".ezpz-yeet"), "w") as f:  # root's own earlier yeet
            f.write("{}\n")
        src = tempfile.mkdtemp(prefix="ezpz-src-", dir="/tmp")
        home = tempfile.mkdtemp(prefix="ezpz-home-", dir="/tmp")
        try:
            for d in (src, home):
                os.chown(d, NOBODY, NOBODY)
            argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", EZPZ, "yeet", src,
                    "--dst", dst]
            env = base_env(HOME=home, USER="nobody")
            proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(proc.returncode, 1, proc.stderr)
            self.assertIn(f"{dst} belongs to root", proc.stderr)
            self.assertIn(f"--dst {shared}/nobody/venv", proc.stderr)
            self.assertEqual(proc.stderr.count("\n"), 1, proc.stderr)
            self.assertEqual(listing(shared), ["venv"])
            # --force cannot help: the same answer, nothing touched.
            proc = subprocess.run(argv + ["--force"], env=env, capture_output=True, text=True, timeout=60)
            self.assertIn("belongs to root", proc.stderr)
            self.assertEqual(listing(shared), ["venv"])
            # The path it suggests works.
            proc = subprocess.run(argv[:-1] + [f"{shared}/nobody/venv"], env=env, capture_output=True, text=True,
                                  timeout=60)
            self.assertEqual(proc.returncode, 0, proc.stderr)
        finally:
            shutil.rmtree(src, ignore_errors=True)
            shutil.rmtree(home, ignore_errors=True)


class DefaultDestination(TempDirTest):
    """The default destination (issue #56, part 12): one folder per user, made private, one copy per
    source, so two projects' `venv` and two users' never meet; a folder another user made first is
    refused; `[yeet] destination` brings back the Python ezpz's /tmp/<name>."""

    def setUp(self):
        super().setUp()
        self.assertEqual(os.geteuid(), 0, "needs root (as the cluster tests) to be two users")
        self.user = "ezpz-e2e-" + os.path.basename(self.tmp)  # /tmp/<user>: no one else's name
        self.home = tempfile.mkdtemp(prefix="ezpz-home-", dir="/tmp")
        self.projects = tempfile.mkdtemp(prefix="ezpz-projects-", dir="/tmp")
        for d in (self.home, self.projects):
            os.chown(d, NOBODY, NOBODY)
        self.env = base_env(HOME=self.home, USER=self.user)

    def tearDown(self):
        for d in (self.home, self.projects, f"/tmp/{self.user}"):
            shutil.rmtree(d, ignore_errors=True)
        super().tearDown()

    def as_nobody(self, args, check=0):
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", EZPZ, *args]
        proc = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, check, proc.stderr)
        return proc

    def project(self, name):
        venv = os.path.join(self.projects, name, "venv")
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "mkdir", "-p",
                os.path.join(venv, "lib")]
        subprocess.run(argv, check=True)
        return venv

    def test_two_projects_venvs_go_to_two_places_of_the_users_own(self):
        a, b = self.project("projA"), self.project("projB")
        dst_a = self.as_nobody(["yeet", a, "--where"]).stdout.strip()
        dst_b = self.as_nobody(["yeet", b, "--where"]).stdout.strip()
        self.assertRegex(dst_a, rf"^/tmp/{self.user}/venv-[0-9a-f]{{8}}$")
        self.assertRegex(dst_b, rf"^/tmp/{self.user}/venv-[0-9a-f]{{8}}$")
        self.assertNotEqual(dst_a, dst_b)
        for src, dst in ((a, dst_a), (b, dst_b)):
            proc = self.as_nobody(["yeet", src, "--json"])
            self.assertEqual(json.loads(proc.stdout)["destination"], dst)
        self.assertEqual(sorted(os.listdir(f"/tmp/{self.user}")), sorted([os.path.basename(dst_a),
                                                                          os.path.basename(dst_b)]))
        st = os.stat(f"/tmp/{self.user}")
        self.assertEqual((st.st_uid, st.st_mode & 0o777), (NOBODY, 0o700))
        # The same source again: the same place (an incremental yeet, nothing to write).
        again = json.loads(self.as_nobody(["yeet", a, "--json"]).stdout)
        self.assertEqual(again["destination"], dst_a)

    def test_a_users_folder_another_user_made_first_is_refused(self):
        src = self.project("projA")
        # Another user (daemon, uid 1: any user may write /tmp) makes /tmp/<user> first, open to all.
        os.makedirs(f"/tmp/{self.user}")
        os.chmod(f"/tmp/{self.user}", 0o777)
        os.chown(f"/tmp/{self.user}", 1, 1)
        proc = self.as_nobody(["yeet", src], check=1)
        self.assertIn(f"/tmp/{self.user} belongs to daemon", proc.stderr)
        self.assertIn("--dst", proc.stderr)
        self.assertEqual(proc.stderr.count("\n"), 1, proc.stderr)
        self.assertEqual(os.listdir(f"/tmp/{self.user}"), [], "nothing written through it")

    def test_the_config_brings_back_tmp_name(self):
        src = self.project("projA")
        with open(os.path.join(self.home, "ezpz.toml"), "w") as f:
            f.write(f'[yeet]\ndestination = "{self.projects}/{{name}}"\n')
        self.env["EZPZ_CONFIG"] = os.path.join(self.home, "ezpz.toml")
        self.assertEqual(self.as_nobody(["yeet", src, "--where"]).stdout.strip(), f"{self.projects}/venv")
        with open(os.path.join(self.home, "ezpz.toml"), "w") as f:
            f.write('[yeet]\ndestination = "/tmp/{project}"\n')
        proc = self.as_nobody(["yeet", src, "--where"], check=2)
        self.assertIn("[yeet] destination", proc.stderr)
        self.assertIn("{user}, {name} and {hash}", proc.stderr)


class PastedHints(TempDirTest):
    """Every line ezpz prints to be pasted runs as printed, whatever the path holds."""

    def test_yeet_prints_a_source_line_that_runs(self):
        parent = tempfile.mkdtemp(prefix="ezpz-my proj é-", dir="/tmp")
        try:
            venv = os.path.join(self.tmp, "venv ü")
            subprocess.run([PYTHON, "-m", "venv", "--without-pip", venv], check=True)
            dst = os.path.join(parent, "venv ü 'x'")
            out = run(["yeet", venv, "--dst", dst], base_env(), check=0).stdout
            line = next(ln.strip() for ln in out.splitlines() if ln.strip().startswith("source "))
            got = subprocess.run(["bash", "-c", line + ' && echo "$VIRTUAL_ENV"'], capture_output=True, text=True)
            self.assertEqual(got.returncode, 0, f"{line!r}: {got.stderr}")
            self.assertEqual(got.stdout.strip(), dst)
        finally:
            shutil.rmtree(parent, ignore_errors=True)

    def test_tar_env_prints_a_yeet_line_that_names_the_archive(self):
        venv = os.path.join(self.tmp, "my proj é", "venv ü")
        os.makedirs(os.path.dirname(venv))
        subprocess.run([PYTHON, "-m", "venv", "--without-pip", venv], check=True)
        out = run(["tar-env", venv], base_env(), check=0).stdout
        line = next(ln for ln in out.splitlines() if "ezpz yeet " in ln)
        words = shlex.split(line[line.index("ezpz yeet "):])
        self.assertEqual(words[:2], ["ezpz", "yeet"])
        self.assertEqual(len(words), 3, line)
        self.assertTrue(os.path.isfile(words[2]), line)


if __name__ == "__main__":
    main(verbosity=2)
