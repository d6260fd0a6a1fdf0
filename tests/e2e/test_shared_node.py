"""Safe on a shared machine (#53, docs/security.md): two real users on one machine, a victim who
runs ezpz and another user ("eve") who can write /tmp and plant names in it, each finding of the
shared-node review reproduced as those users. Needs root, to create the two throwaway users (CI
runs as root); without it the file fails, it does not skip.

A "node" is this machine with its own /tmp: a fake ssh (--ssh-command) runs the start script the
head sends with TMPDIR set to a 1777 directory that stands for the node's /tmp, and with the head's
ezpz path (the script's EXE word) replaced by one the test chooses (a node without a shared
filesystem, or one where the path is another user's).

Kernel settings: none of these tests needs fs.protected_symlinks or fs.protected_regular set
either way; each plants what a user can plant under either setting, and the victim's file is
opened or run only where ezpz would have refused it on its own (tests that write through a symlink
say so where they do)."""
import hashlib
import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from ezpz_e2e import EZPZ, base_env, main  # noqa: E402

# The fake ssh: runs the head's start script (`sh -c SCRIPT ezpz EXE DIGEST SIZE SHIP ARGS...`) here,
# as the user who runs ezpz, with the node's /tmp as TMPDIR and EXE as NODE_EXE says.
FAKE_SSH = """#!/usr/bin/env python3
import os, shlex, sys
words = shlex.split(sys.argv[-1])
assert words[:2] == ["sh", "-c"] and words[3] == "ezpz", words[:4]
if os.environ.get("NODE_EXE"):
    words[4] = os.environ["NODE_EXE"]
env = dict(os.environ, TMPDIR=os.environ["NODE_TMP"])
os.execvpe(words[0], words, env)
"""

# What eve plants where the victim's ezpz might be run: it leaves a mark that it ran, as whom and
# with what, then runs the real ezpz so that the run looks normal (as in the review).
PLANT = """#!/bin/sh
echo "ran as $(id -un) with: $1" >> {marks}/pwned
exec {real} "$@"
"""


def user(name):
    """A throwaway user and its own group, made now and removed at exit."""
    subprocess.run(["userdel", name], capture_output=True)
    subprocess.run(["useradd", "-M", "-U", "-s", "/bin/sh", "-d", "/nonexistent", name], check=True)
    return pwd.getpwnam(name)


class SharedNode(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise AssertionError("these tests make two throwaway users: run them as root (CI does)")
        tag = str(os.getpid() % 100000)
        cls.victim = user("ezv" + tag)
        cls.eve = user("eze" + tag)
        cls.base = tempfile.mkdtemp(prefix="ezpz-shared-")
        os.chmod(cls.base, 0o755)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.base, ignore_errors=True)
        for u in (cls.victim, cls.eve):
            subprocess.run(["userdel", u.pw_name], capture_output=True)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=self.base)
        os.chmod(self.tmp, 0o755)
        # The victim's home (private), with its own copy of ezpz, as a user keeps it.
        self.home = self.mkdir("home", 0o700, self.victim)
        self.exe = os.path.join(self.home, "bin", "ezpz")
        self.mkdir("home/bin", 0o755, self.victim)
        shutil.copy(EZPZ, self.exe)
        os.chown(self.exe, self.victim.pw_uid, self.victim.pw_gid)
        with open(EZPZ, "rb") as f:
            self.digest = hashlib.sha256(f.read()).hexdigest()
        self.node_tmp = self.mkdir("nodetmp", 0o1777)  # the node's /tmp
        self.marks = self.mkdir("marks", 0o1777)       # where a planted program leaves its mark
        self.write(os.path.join(self.home, "fakessh"), FAKE_SSH, 0o755, self.victim)
        self.write(os.path.join(self.home, "hosts"), "node1\n", 0o644, self.victim)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- helpers ------------------------------------------------------------------------------
    def mkdir(self, rel, mode, owner=None):
        path = os.path.join(self.tmp, rel) if not rel.startswith("/") else rel
        os.makedirs(path, exist_ok=True)
        os.chmod(path, mode)
        if owner is not None:
            os.chown(path, owner.pw_uid, owner.pw_gid)
        return path

    def write(self, path, text, mode, owner):
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        os.chown(path, owner.pw_uid, owner.pw_gid)
        return path

    def as_user(self, who, argv, env, timeout=120):
        kwargs = {} if who is None else dict(user=who.pw_uid, group=who.pw_gid, extra_groups=[])
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, cwd="/", **kwargs)

    def source_tree(self, owner):
        src = self.mkdir("home/src" if owner is self.victim else "rootsrc", 0o755, owner)
        for i in range(5):
            self.write(os.path.join(src, f"m{i}.py"), f"x = {i}\n", 0o644, owner)
        return src

    def plant(self, path, owner):
        """eve's program at `path` (its directory made by `owner`, mode 0755 unless it exists)."""
        d = os.path.dirname(path)
        if not os.path.isdir(d):
            self.mkdir(d, 0o755, owner)
        self.write(path, PLANT.format(marks=self.marks, real=EZPZ), 0o755, owner)

    def pwned(self):
        path = os.path.join(self.marks, "pwned")
        if not os.path.exists(path):
            return ""
        with open(path) as f:
            return f.read()

    def yeet_to_node(self, who, exe, src, dst, node_exe="", extra=()):
        env = base_env(NODE_TMP=self.node_tmp, NODE_EXE=node_exe, EZPZ_MACHINE="local",
                       HOME=self.home if who is self.victim else self.tmp)
        return self.as_user(who, [exe, "yeet", src, "--dst", dst, "--hostfile", os.path.join(self.home, "hosts"),
                                  "--no-hsn", "--transport", "ssh", "--ssh-command",
                                  os.path.join(self.home, "fakessh"), "--json", *extra], env)

    # -- finding 1: the node start script runs only what it has checked ------------------------
    def test_start_script_never_runs_a_binary_planted_in_the_cache(self):
        uid = self.victim.pw_uid
        cache = os.path.join(self.node_tmp, f".ezpz-{uid}-{self.digest[:16]}")
        self.plant(os.path.join(cache, "ezpz"), self.eve)
        src = self.source_tree(self.victim)
        dst = os.path.join(self.home, "dst")
        proc = self.yeet_to_node(self.victim, self.exe, src, dst, node_exe="/nonexistent/ezpz")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.pwned(), "", "the victim ran eve's program")
        self.assertTrue(json.loads(proc.stdout)["remote"][0]["ok"], proc.stdout)
        self.assertIn("not this user's own", proc.stderr)
        # The fresh directory that served the run is gone; eve's is hers, untouched.
        self.assertEqual(sorted(os.listdir(self.node_tmp)), [os.path.basename(cache)])
        with open(os.path.join(dst, "m3.py")) as f:
            self.assertEqual(f.read(), "x = 3\n")

    def test_start_script_never_runs_the_head_path_when_another_user_could_write_it(self):
        src = self.source_tree(self.victim)
        dst = os.path.join(self.home, "dst")
        # The head's path on the node is node-local: eve's file there, then a directory of the
        # victim's that anyone can write (eve swaps the file in), then a symlink eve made.
        planted = [(os.path.join(self.node_tmp, "vbin", "ezpz"), self.eve, 0o755),
                   (os.path.join(self.node_tmp, "vbin2", "ezpz"), self.victim, 0o777)]
        for path, owner, mode in planted:
            self.plant(path, owner)
            os.chmod(os.path.dirname(path), mode)
            os.chown(path, self.victim.pw_uid, self.victim.pw_gid)  # the file itself looks like hers
        os.chown(planted[0][0], self.eve.pw_uid, self.eve.pw_gid)
        link = os.path.join(self.node_tmp, "vlink")
        os.symlink(os.path.dirname(planted[0][0]), link)
        os.lchown(link, self.eve.pw_uid, self.eve.pw_gid)
        for exe in [planted[0][0], planted[1][0], os.path.join(link, "ezpz")]:
            proc = self.yeet_to_node(self.victim, self.exe, src, dst, node_exe=exe)
            self.assertEqual(proc.returncode, 0, exe + ": " + proc.stderr)
            self.assertEqual(self.pwned(), "", f"the victim ran {exe}")
        # The node shipped a copy of its own instead, into the victim's private cache, and reuses it.
        cache = os.path.join(self.node_tmp, f".ezpz-{self.victim.pw_uid}-{self.digest[:16]}")
        st = os.lstat(cache)
        self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (self.victim.pw_uid, 0o700))
        before = os.stat(os.path.join(cache, "ezpz"))
        proc = self.yeet_to_node(self.victim, self.exe, src, dst, node_exe="/nonexistent/ezpz")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(os.stat(os.path.join(cache, "ezpz")).st_ino, before.st_ino, "the cached copy was shipped again")

    def test_root_never_runs_a_binary_another_user_planted(self):
        cache = os.path.join(self.node_tmp, f".ezpz-0-{self.digest[:16]}")
        self.plant(os.path.join(cache, "ezpz"), self.eve)
        src = self.mkdir("rootsrc", 0o755)
        self.write(os.path.join(src, "a.txt"), "root's\n", 0o644, pwd.getpwuid(0))
        dst = os.path.join(self.tmp, "rootdst")
        proc = self.yeet_to_node(None, EZPZ, src, dst, node_exe="/nonexistent/ezpz")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.pwned(), "", "root ran eve's program")

    # -- finding 2: nothing is written through a name planted in a shared directory -----------
    def spray(self, prefix, target, owner):
        """eve's symlinks to `target` at `prefix` + every pid the next runs may get (as the review's
        attacker does: pids are handed out in order)."""
        with open("/proc/sys/kernel/ns_last_pid") as f:
            last = int(f.read())
        for pid in range(last + 1, last + 3000):
            path = f"{prefix}{pid}{self.spray_tail}"
            os.symlink(target, path)
            os.lchown(path, owner.pw_uid, owner.pw_gid)

    def test_compress_and_tar_env_never_write_through_a_planted_name(self):
        # Needs fs.protected_symlinks=0 to fail before the fix (the links are eve's, in a sticky
        # directory); passes with either setting after it.
        shared = self.mkdir("shared", 0o1777)
        precious = self.write(os.path.join(self.home, "precious"), "the victim's own\n", 0o600, self.victim)
        src = self.source_tree(self.victim)
        env = base_env(HOME=self.home, EZPZ_MACHINE="local")
        dst = os.path.join(shared, "venv")
        self.spray_tail = ".pack.tar.zst"
        self.spray(dst + ".ezpz-tmp-", precious, self.eve)
        proc = self.as_user(self.victim, [self.exe, "yeet", src, "--dst", dst, "--compress"], env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        out = os.path.join(shared, "env.tar.zst")
        self.spray_tail = ""
        self.spray(out + ".ezpz-tmp-", precious, self.eve)
        proc = self.as_user(self.victim, [self.exe, "tar-env", src, "-o", out], env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(precious) as f:
            self.assertEqual(f.read(), "the victim's own\n", "a planted link was written through")
        with open(os.path.join(dst, "m2.py")) as f:
            self.assertEqual(f.read(), "x = 2\n")
        self.assertEqual(os.stat(out).st_uid, self.victim.pw_uid)
        # Nothing of the victim's is left beside them, and eve's names were not the victim's to remove.
        mine = [n for n in os.listdir(shared) if os.lstat(os.path.join(shared, n)).st_uid == self.victim.pw_uid]
        self.assertEqual(sorted(mine), ["env.tar.zst", "env.tar.zst.sha256", "venv"])
        self.assertNotIn("rm -rf", proc.stderr)

    # -- finding 3: root never adopts another user's tree ---------------------------------------
    def squat_env(self, path, src, owner, text):
        """An env-looking tree at `path` whose file matches the source's size, mtime and mode."""
        self.mkdir(path, 0o755, owner)
        self.write(os.path.join(path, "pyvenv.cfg"), "home = /usr/bin\n", 0o644, owner)
        target = os.path.join(path, "m0.py")
        real = os.path.join(src, "m0.py")
        self.write(target, text[:os.path.getsize(real)].ljust(os.path.getsize(real)), 0o644, owner)
        st = os.stat(real)
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
        return target

    def test_root_never_adopts_another_users_tree(self):
        shared = self.mkdir("shared", 0o1777)
        src = self.mkdir("rootsrc", 0o755)
        for i in range(3):
            self.write(os.path.join(src, f"m{i}.py"), f"x = {i}\n", 0o644, pwd.getpwuid(0))
        env = base_env(HOME=self.tmp, EZPZ_MACHINE="local")
        # A squatted destination that looks like an env: refused without --force; with it, a
        # tree of root's own, none of eve's files linked in.
        dst = os.path.join(shared, "rootenv")
        self.squat_env(dst, src, self.eve, "EVE")
        proc = self.as_user(None, [EZPZ, "yeet", src, "--dst", dst], env)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn(f"belongs to {self.eve.pw_name}", proc.stderr)
        proc = self.as_user(None, [EZPZ, "yeet", src, "--dst", dst, "--force"], env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for i in range(3):
            path = os.path.join(dst, f"m{i}.py")
            self.assertEqual(os.stat(path).st_uid, 0, path)
            with open(path) as f:
                self.assertEqual(f.read(), f"x = {i}\n")
        # A planted <dst>.ezpz-tmp-<pid>.old is never renamed into place nor synced from.
        dst2 = os.path.join(shared, "rootenv2")
        self.squat_env(dst2 + ".ezpz-tmp-3999999.old", src, self.eve, "EVE")
        proc = self.as_user(None, [EZPZ, "yeet", src, "--dst", dst2], env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(os.stat(dst2).st_uid, 0)
        for i in range(3):
            with open(os.path.join(dst2, f"m{i}.py")) as f:
                self.assertEqual(f.read(), f"x = {i}\n")
            self.assertEqual(os.stat(os.path.join(dst2, f"m{i}.py")).st_uid, 0)

    # -- finding 4: the parents ezpz makes or reuses below /tmp ---------------------------------
    def test_a_parent_another_user_made_is_refused_and_ours_are_private(self):
        shared = self.mkdir("shared", 0o1777)
        src = self.source_tree(self.victim)
        env = base_env(HOME=self.home, EZPZ_MACHINE="local")
        squat = self.mkdir(os.path.join(shared, self.victim.pw_name), 0o777, self.eve)
        proc = self.as_user(self.victim, [self.exe, "yeet", src, "--dst", os.path.join(squat, "venv")], env)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn(f"{squat} belongs to {self.eve.pw_name}", proc.stderr)
        self.assertEqual(os.listdir(squat), [])
        # A parent of the victim's own that others can write is refused too; one ezpz makes is 0700.
        os.chown(squat, self.victim.pw_uid, self.victim.pw_gid)
        proc = self.as_user(self.victim, [self.exe, "yeet", src, "--dst", os.path.join(squat, "venv")], env)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("can be written by other users", proc.stderr)
        made = os.path.join(shared, "v2", "deeper")
        proc = self.as_user(self.victim, [self.exe, "yeet", src, "--dst", os.path.join(made, "venv")], env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for d in (os.path.dirname(made), made):
            st = os.stat(d)
            self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (self.victim.pw_uid, 0o700), d)

    # -- finding 9: a copy in /tmp is private --------------------------------------------------
    def test_the_copy_is_private_at_the_top(self):
        shared = self.mkdir("shared", 0o1777)
        src = self.source_tree(self.victim)  # 0755, but inside a 0700 home
        env = base_env(HOME=self.home, EZPZ_MACHINE="local")
        for i, extra in enumerate([[], ["--compress"], ["--copy"]]):
            dst = os.path.join(shared, f"data{i}")
            proc = self.as_user(self.victim, ["sh", "-c", 'umask 022; exec "$@"', "sh", self.exe, "yeet", src,
                                              "--dst", dst, *extra], env)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertEqual(stat.S_IMODE(os.stat(dst).st_mode), 0o700, extra)
            proc = self.as_user(self.eve, ["cat", os.path.join(dst, "m1.py")], base_env())
            self.assertNotEqual(proc.returncode, 0, f"eve read the victim's copy ({extra})")

    # -- finding 5: the failover hostfile's directory ------------------------------------------
    def test_failover_hostfile_never_goes_through_another_users_directory(self):
        shared = self.mkdir("shared", 0o1777)  # the node's /tmp (TMPDIR)
        bindir = self.mkdir("home/fakebin", 0o755, self.victim)
        self.write(os.path.join(bindir, "mpiexec"), "#!/bin/sh\nexit 0\n", 0o755, self.victim)
        nodes = self.write(os.path.join(self.home, "nodes"), "n1\nn2\n", 0o644, self.victim)
        precious = self.write(os.path.join(self.home, "precious"), "the victim's own\n", 0o600, self.victim)
        env = base_env(HOME=self.home, PATH=bindir + ":" + os.environ.get("PATH", "/usr/bin:/bin"), TMPDIR=shared,
                       PBS_JOBID="4242.pbs", PBS_NODEFILE=nodes, EZPZ_MACHINE="polaris")
        argv = [self.exe, "launch", "--spare-nodes", "1", "--no-record", "-n", "1", "--", "true"]
        squat = self.mkdir(os.path.join(shared, f"ezpz-{self.victim.pw_uid}-4242"), 0o777, self.eve)
        self.spray_tail = ""
        self.spray(os.path.join(squat, "hostfile-0.tmp."), precious, self.eve)
        proc = self.as_user(self.victim, argv, env)
        self.assertNotEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(f"{squat} belongs to {self.eve.pw_name}", proc.stderr)
        with open(precious) as f:
            self.assertEqual(f.read(), "the victim's own\n")
        shutil.rmtree(squat)
        proc = self.as_user(self.victim, argv, env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        st = os.stat(os.path.join(shared, f"ezpz-{self.victim.pw_uid}-4242"))
        self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (self.victim.pw_uid, 0o700))

    # -- finding 8: root's kill signals root's own processes ------------------------------------
    def test_root_kill_signals_only_roots_processes_unless_all_users(self):
        env = dict(base_env(), EZPZ_JOB_ID="vm:29500")
        token = f"shared-node-kill-{os.getpid()}"  # no other test's process has it
        sleeper = ["python3", "-c", f"import time; print('up', flush=True); time.sleep(120)  # {token}"]
        kw = dict(env=env, stdout=subprocess.PIPE, text=True, cwd="/")
        eves = subprocess.Popen(sleeper, user=self.eve.pw_uid, group=self.eve.pw_gid, extra_groups=[], **kw)
        roots = subprocess.Popen(sleeper, **kw)
        try:
            for p in (eves, roots):
                self.assertEqual(p.stdout.readline().strip(), "up")
            listed = json.loads(self.as_user(None, [EZPZ, "kill", "--dry-run", "--json", token],
                                             base_env()).stdout)
            self.assertEqual([p["pid"] for p in listed["processes"]], [roots.pid])
            listed = json.loads(self.as_user(None, [EZPZ, "kill", "--dry-run", "--json", "--all-users", token],
                                             base_env()).stdout)
            self.assertEqual(sorted(p["pid"] for p in listed["processes"]), sorted([roots.pid, eves.pid]))
            proc = self.as_user(None, [EZPZ, "kill", token], base_env())
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertEqual(roots.wait(timeout=60), -15)
            self.assertIsNone(eves.poll(), "root's kill ended eve's process")
        finally:
            for p in (eves, roots):
                p.kill()
                p.wait()

    # -- finding 11: --log-dir in another user's directory -------------------------------------
    def test_log_dir_another_user_owns_is_refused(self):
        shared = self.mkdir("shared", 0o1777)
        logs = self.mkdir(os.path.join(shared, "mylogs"), 0o777, self.eve)
        env = base_env(HOME=self.home, EZPZ_MACHINE="local")
        proc = self.as_user(self.victim, [self.exe, "launch", "-n", "2", "--launcher", "local", "--log-dir", logs, "--",
                                          "python3", "-c", "print('secret')"], env)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn(f"--log-dir {logs}: {logs} belongs to {self.eve.pw_name}", proc.stderr)
        self.assertEqual(os.listdir(logs), [])

    def test_a_log_that_cannot_be_made_is_said(self):
        logs = self.mkdir("home/logs", 0o755, self.victim)
        env = base_env(HOME=self.home, EZPZ_MACHINE="local")
        argv = [self.exe, "launch", "-n", "1", "--launcher", "local", "--log-dir", logs, "--", "python3", "-c",
                "print('a line')"]
        proc = self.as_user(self.victim, argv, env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        first = os.path.join(logs, os.readlink(os.path.join(logs, "latest")))  # each launch its own directory
        out = [n for n in os.listdir(first) if n.endswith(".out")]
        self.assertEqual(len(out), 1, os.listdir(first))
        os.chmod(logs, 0o555)  # the next launch's directory cannot be made there: nor its logs
        proc = self.as_user(self.victim, argv, env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("a line", proc.stdout)
        self.assertRegex(proc.stderr, f"log {re.escape(logs)}/launch-[^/]*/{re.escape(out[0])} cannot be made "
                         r"\(No such file or directory\): its lines go to the console only")

    # -- finding 15: a work directory another user made first names her ------------------------
    def test_a_squatted_work_directory_names_its_owner(self):
        shared = self.mkdir("shared", 0o1777)
        src = self.source_tree(self.victim)
        dst = os.path.join(shared, "venv")
        # The victim's ezpz gets the pid of the shell that execs it: eve's directory of that name
        # is there first.
        proc = subprocess.Popen(["sh", "-c", 'read go; exec "$@"', "sh", self.exe, "yeet", src, "--dst", dst],
                                env=base_env(HOME=self.home, EZPZ_MACHINE="local"), stdin=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd="/", user=self.victim.pw_uid,
                                group=self.victim.pw_gid, extra_groups=[])
        self.mkdir(f"{dst}.ezpz-tmp-{proc.pid}", 0o755, self.eve)
        _, err = proc.communicate("go\n", timeout=120)
        self.assertEqual(proc.returncode, 1, err)
        self.assertIn(f"{dst}.ezpz-tmp-{proc.pid}: {self.eve.pw_name} made it first", err)
        self.assertNotIn("rm -rf", err)

    def test_a_spare_another_user_planted_is_never_used_nor_touched(self):
        """An incremental yeet starts from DST.ezpz-spare (docs/yeet.md): eve's directory of that
        name, made first and later filled with the copy's tree and manifest (altered content, the
        same sizes and mtimes: it passes every check but its owner), is never taken, by root too
        (whom a sticky /tmp does not stop from moving it)."""
        shared = self.mkdir("shared", 0o1777)
        root = pwd.getpwuid(0)
        src = self.mkdir("rootsrc", 0o755)
        for i in range(5):
            self.write(os.path.join(src, f"m{i}.py"), f"x = {i}\n", 0o644, root)
        dst = os.path.join(shared, "venv")
        spare = dst + ".ezpz-spare"
        self.mkdir(spare, 0o755, self.eve)
        proc = self.yeet_to_node(None, EZPZ, src, dst, node_exe="/nonexistent/ezpz")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        shutil.rmtree(spare)
        shutil.copytree(dst, spare, symlinks=True)
        for top, dirs, files in os.walk(spare):
            for name in files:
                path = os.path.join(top, name)
                if name.endswith(".py"):
                    st = os.stat(path)
                    with open(path, "w") as f:
                        f.write("x = 9\n"[:st.st_size].ljust(st.st_size))
                    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
            for name in dirs + files:
                os.lchown(os.path.join(top, name), self.eve.pw_uid, self.eve.pw_gid)
        os.chown(spare, self.eve.pw_uid, self.eve.pw_gid)
        os.chmod(spare, 0o755)
        planted = sorted(os.listdir(spare))
        # A file changes: the next yeet is a delta, made without eve's tree.
        self.write(os.path.join(src, "m1.py"), "x = 100\n", 0o644, root)
        proc = self.yeet_to_node(None, EZPZ, src, dst, node_exe="/nonexistent/ezpz")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(json.loads(proc.stdout)["incremental"]["mode"], "delta", proc.stdout)
        for i in range(5):
            path = os.path.join(dst, f"m{i}.py")
            self.assertEqual(os.stat(path).st_uid, 0, path)
            with open(path) as f:
                self.assertEqual(f.read(), "x = 100\n" if i == 1 else f"x = {i}\n", path)
        st = os.lstat(spare)
        self.assertEqual((st.st_uid, sorted(os.listdir(spare))), (self.eve.pw_uid, planted), "eve's spare was touched")
        with open(os.path.join(spare, "m2.py")) as f:
            self.assertEqual(f.read().strip(), "x = 9")

    # -- finding 12: a failover probe cannot be made to fail by pre-made directories -----------
    def test_probe_is_not_blocked_by_planted_directories(self):
        shared = self.mkdir("shared", 0o1777)
        with open("/proc/sys/kernel/ns_last_pid") as f:
            last = int(f.read())
        for pid in range(last + 1, last + 3000):
            self.mkdir(os.path.join(shared, f".ezpz-probe-{pid}"), 0o755, self.eve)
        proc = self.as_user(self.victim, [self.exe, "__doctor-node", "--probe", "--dst", shared],
                            base_env(HOME=self.home))
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertTrue(json.loads(proc.stdout)["ok"], proc.stdout)

    # -- findings 14 and 15: what a failure says ------------------------------------------------
    def test_a_full_disk_says_so_and_a_fifo_hostfile_is_named(self):
        small = self.mkdir("small", 0o755)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", small], check=True)
        try:
            src = self.mkdir("big", 0o755)
            with open(os.path.join(src, "blob"), "wb") as f:
                f.write(os.urandom(4 << 20))
            proc = self.as_user(None, [EZPZ, "yeet", src, "--dst", os.path.join(small, "big"), "--copy"],
                                base_env(HOME=self.tmp))
            self.assertEqual(proc.returncode, 1, proc.stderr)
            self.assertIn("No space left on device", proc.stderr)
            self.assertNotIn("cross-device", proc.stderr)
            self.assertEqual(os.listdir(small), [])
        finally:
            subprocess.run(["umount", small], check=True)
        fifo = os.path.join(self.tmp, "hosts.fifo")
        os.mkfifo(fifo)
        proc = self.as_user(None, [EZPZ, "launch", "--dry-run", "--hostfile", fifo, "--", "true"], base_env())
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn(f"hostfile {fifo} (from --hostfile {fifo}) is not a regular file", proc.stderr)

    # -- concurrent yeets to one destination ----------------------------------------------------
    def test_concurrent_yeets_take_turns_and_a_lock_of_another_user_is_refused(self):
        shared = self.mkdir("shared", 0o1777)
        env = base_env(HOME=self.home, EZPZ_MACHINE="local")
        srcs = []
        for name in ("A", "B"):
            src = self.mkdir(f"home/src{name}", 0o755, self.victim)
            for i in range(400):
                self.write(os.path.join(src, f"f{i}"), name * 2000, 0o644, self.victim)
            srcs.append(src)
        dst = os.path.join(shared, "venv")
        kw = dict(env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd="/",
                  user=self.victim.pw_uid, group=self.victim.pw_gid, extra_groups=[])
        first = subprocess.Popen([self.exe, "yeet", srcs[0], "--dst", dst, "--copy"], **kw)
        second = subprocess.Popen([self.exe, "yeet", srcs[1], "--dst", dst, "--copy"], **kw)
        errs = [p.communicate(timeout=300)[1] for p in (first, second)]
        self.assertEqual([first.returncode, second.returncode], [0, 0], errs)
        texts = {open(os.path.join(dst, f"f{i}")).read()[0] for i in range(400)}
        self.assertEqual(len(texts), 1, "a mixed tree")
        waited = [i for i, e in enumerate(errs) if "waiting for another yeet" in e]
        if waited:  # the one that waited came last: its tree is the one in place
            self.assertEqual(texts, {"AB"[waited[0]]})
        self.assertEqual(sorted(os.listdir(shared)), ["venv"])  # no lock or work left over
        # A lock file another user made: refused, naming her.
        lock = self.write(os.path.join(shared, "venv2.ezpz-lock"), "", 0o666, self.eve)
        proc = self.as_user(self.victim, [self.exe, "yeet", srcs[0], "--dst", os.path.join(shared, "venv2")], env)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn(f"{lock} belongs to {self.eve.pw_name}", proc.stderr)

    @staticmethod
    def parent_of(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                return int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            return 0

    # -- finding 16: mpirun held open by another user's connections to its port ----------------
    def test_a_launcher_held_open_by_strangers_is_stopped_once_every_rank_has_ended(self):
        # Open MPI's mpirun waits for as long as anyone holds a connection to its own port: eve
        # holds some from the moment the rank runs. ezpz stops it once every rank has ended.
        holder = """import socket, sys, time
held = []
for port in sys.argv[1:]:
    for _ in range(5):
        held.append(socket.create_connection(("127.0.0.1", int(port))))
print("holding", len(held), flush=True)
time.sleep(300)
"""
        launch = subprocess.Popen([EZPZ, "launch", "--launcher", "mpirun", "-n", "1", "--", "python3", "-c",
                                   "import time; print('up', flush=True); time.sleep(2)"], env=base_env(),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/")
        eve = None
        try:
            self.assertEqual(launch.stdout.readline().strip(), "up")
            listening = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
            ports = []  # those of this launch's own mpirun (other tests may run theirs)
            for line in listening.splitlines():
                port, pid = re.search(r":(\d+)\s", line), re.search(r'"mpirun",pid=(\d+)', line)
                if port and pid and self.parent_of(int(pid.group(1))) == launch.pid:
                    ports.append(port.group(1))
            self.assertTrue(ports, listening)
            eve = subprocess.Popen(["python3", "-c", holder, *ports], user=self.eve.pw_uid, group=self.eve.pw_gid,
                                   extra_groups=[], stdout=subprocess.PIPE, text=True, cwd="/")
            self.assertTrue(eve.stdout.readline().startswith("holding"))
            started = time.monotonic()
            rc = launch.wait(timeout=120)
            err = launch.stderr.read()
            self.assertEqual(rc, 0, err)
            self.assertIn("still runs 10 s after every rank ended", err)
            self.assertLess(time.monotonic() - started, 100)
        finally:
            for p in (launch, eve):
                if p is not None:
                    p.kill()
                    p.wait()


if __name__ == "__main__":
    main()
