"""ezpz yeet and tar-env on one node, with real venvs, real tarballs and hostile archives."""
import hashlib
import io
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tarfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from ezpz_e2e import EZPZ, SOURCE_DIR, TempDirTest, base_env, main, run, wait_until  # noqa: E402

PYTHON = "/usr/bin/python3"  # Debian's, with python3-venv
WORK = "/var/tmp"            # sources live off /tmp, as on a shared filesystem


def make_venv(parent, name="my env's v1"):
    """A real venv holding tinypkg (console script tinypkg-hello), in a path with a space and a quote."""
    prefix = os.path.join(parent, name)
    subprocess.run([PYTHON, "-m", "venv", prefix], check=True)
    wheel = subprocess.run([PYTHON, os.path.join(SOURCE_DIR, "tests", "data", "make_wheel.py"), parent],
                           check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run([os.path.join(prefix, "bin", "pip"), "install", "-q", "--no-index", wheel], check=True)
    return prefix


class Yeet(TempDirTest):
    def setUp(self):
        super().setUp()
        self.src_root = os.path.realpath(__import__("tempfile").mkdtemp(prefix="ezpz-yeet-src ", dir=WORK))
        self.dst_root = __import__("tempfile").mkdtemp(prefix="ezpz-yeet-dst '", dir="/tmp")
        self.env = base_env(EZPZ_HOME=os.path.join(self.tmp, "home"))

    def tearDown(self):
        shutil.rmtree(self.src_root, ignore_errors=True)
        shutil.rmtree(self.dst_root, ignore_errors=True)
        super().tearDown()

    def yeet(self, *args, check=0, env=None):
        return run(["yeet", *args], env or self.env, check=check)

    def assert_moved_venv(self, dst, old_prefix):
        out = subprocess.run([os.path.join(dst, "bin", "python"), "-c", "import sys; print(sys.prefix)"],
                             capture_output=True, text=True, check=True).stdout.strip()
        self.assertEqual(out, dst)
        hello = subprocess.run([os.path.join(dst, "bin", "tinypkg-hello")], capture_output=True, text=True,
                               check=True).stdout.strip()
        self.assertEqual(hello, f"tinypkg hello from {dst}")
        activated = subprocess.run(["bash", "-c", 'source "$1/bin/activate" && echo "$VIRTUAL_ENV"', "-", dst],
                                   capture_output=True, text=True, check=True).stdout.strip()
        self.assertEqual(activated, dst)
        # fish is installed by scripts/install-deps.sh: its absence fails, it never skips this check.
        self.assertIsNotNone(shutil.which("fish"), "fish is missing: run scripts/install-deps.sh")
        fished = subprocess.run(["fish", "-c", 'source $argv[1]/bin/activate.fish; echo $VIRTUAL_ENV', dst],
                                capture_output=True, text=True, check=True).stdout.strip()
        self.assertEqual(fished, dst)
        for name in os.listdir(os.path.join(dst, "bin")):
            path = os.path.join(dst, "bin", name)
            if os.path.isfile(path) and not os.path.islink(path):
                self.assertNotIn(old_prefix.encode(), open(path, "rb").read(), f"bin/{name} names the old prefix")
        self.assertNotIn(old_prefix, open(os.path.join(dst, "pyvenv.cfg")).read())

    def test_venv_every_method_survives_deleting_the_original(self):
        venv = make_venv(self.src_root)
        dsts = {m: os.path.join(self.dst_root, m) for m in ("sync", "copy", "compress")}
        self.yeet(venv, "--dst", dsts["sync"])
        self.yeet(venv, "--dst", dsts["copy"], "--copy")
        self.yeet(venv, "--dst", dsts["compress"], "--compress")
        shutil.rmtree(venv)
        for method, dst in dsts.items():
            with self.subTest(method=method):
                self.assert_moved_venv(dst, venv)

    def test_from_tar_env_and_from_an_ezpz_style_tar_gz(self):
        venv = make_venv(self.src_root)
        packed = run(["tar-env", venv, "--json"], self.env, check=0)
        info = json.loads(packed.stdout)
        self.assertEqual(info["archive"], venv + ".tar.zst")
        self.assertFalse(info["reused"])
        again = json.loads(run(["tar-env", venv, "--json"], self.env, check=0).stdout)
        self.assertTrue(again["reused"])
        gz = os.path.join(self.src_root, "v1.tar.gz")
        subprocess.run(["tar", "-czf", gz, "-C", os.path.dirname(venv), os.path.basename(venv)], check=True)
        shutil.rmtree(venv)
        zst_dst, gz_dst = os.path.join(self.dst_root, "from-zst"), os.path.join(self.dst_root, "from-gz")
        self.yeet(info["archive"], "--dst", zst_dst)
        self.yeet("--src", gz, "--dst", gz_dst)
        self.assert_moved_venv(zst_dst, venv)
        self.assert_moved_venv(gz_dst, venv)

    def test_tar_env_gz_format_and_rebuild_when_the_env_changes(self):
        venv = make_venv(self.src_root)
        out = os.path.join(self.src_root, "env.tgz")
        first = json.loads(run(["tar-env", venv, "-o", out, "--format", "gz", "--json"], self.env, check=0).stdout)
        self.assertFalse(first["reused"])
        subprocess.run(["tar", "-tzf", out], check=True, capture_output=True)  # readable by plain tar
        time.sleep(1.1)
        with open(os.path.join(venv, "new-file"), "w") as f:
            f.write("x")
        second = json.loads(run(["tar-env", venv, "-o", out, "--format", "gz", "--json"], self.env, check=0).stdout)
        self.assertFalse(second["reused"], "the env changed after the archive was made")

    def test_default_source_is_the_active_env(self):
        venv = make_venv(self.src_root)
        dst = os.path.join(self.dst_root, "active")
        self.yeet("--dst", dst, env=dict(self.env, VIRTUAL_ENV=venv))
        self.assert_moved_venv(dst, venv)
        proc = self.yeet(check=2)
        self.assertIn("VIRTUAL_ENV or CONDA_PREFIX", proc.stderr)

    def test_default_destination_is_tmp_name(self):
        src = os.path.join(self.src_root, "ezpz-yeet-default-name")
        os.makedirs(src)
        with open(os.path.join(src, "f"), "w") as f:
            f.write("data")
        try:
            proc = self.yeet(src, "--json")
            self.assertEqual(json.loads(proc.stdout)["destination"], "/tmp/ezpz-yeet-default-name")
            self.assertEqual(open("/tmp/ezpz-yeet-default-name/f").read(), "data")
        finally:
            shutil.rmtree("/tmp/ezpz-yeet-default-name", ignore_errors=True)

    def test_incremental_sync_copies_changes_and_deletes(self):
        src = os.path.join(self.src_root, "data")
        os.makedirs(os.path.join(src, "sub", "__pycache__"))
        for name in ("keep", "change", "drop"):
            with open(os.path.join(src, "sub", name), "w") as f:
                f.write(name)
        with open(os.path.join(src, "sub", "__pycache__", "x.pyc"), "w") as f:
            f.write("pyc")
        os.symlink("keep", os.path.join(src, "sub", "link"))
        dst = os.path.join(self.dst_root, "data")
        first = json.loads(self.yeet(src, "--dst", dst, "--json").stdout)
        self.assertEqual(first["copied_files"], 3)
        self.assertFalse(os.path.exists(os.path.join(dst, "sub", "__pycache__")))
        self.assertEqual(os.readlink(os.path.join(dst, "sub", "link")), "keep")
        time.sleep(0.01)
        with open(os.path.join(src, "sub", "change"), "w") as f:
            f.write("changed!")
        os.remove(os.path.join(src, "sub", "drop"))
        # --dry-run says what the sync would write and remove, and does neither.
        plan = self.yeet(src, "--dst", dst, "--dry-run").stdout
        self.assertIn(f"would write 1 file (8 B) and remove 1 entry in {dst}\n", plan)
        self.assertEqual(open(os.path.join(dst, "sub", "change")).read(), "change")
        self.assertTrue(os.path.exists(os.path.join(dst, "sub", "drop")))
        fresh = os.path.join(self.dst_root, "fresh")
        self.assertIn(f"would write 2 files (12 B) to {fresh} (new)\n", self.yeet(src, "--dst", fresh, "--dry-run").stdout)
        self.assertFalse(os.path.exists(fresh))
        second = json.loads(self.yeet(src, "--dst", dst, "--json").stdout)
        self.assertEqual((second["copied_files"], second["deleted"]), (1, 1))
        self.assertEqual(open(os.path.join(dst, "sub", "change")).read(), "changed!")
        self.assertFalse(os.path.exists(os.path.join(dst, "sub", "drop")))
        with_cache = os.path.join(self.dst_root, "with-cache")
        self.yeet(src, "--dst", with_cache, "--include-pycache", "--copy")
        self.assertTrue(os.path.exists(os.path.join(with_cache, "sub", "__pycache__", "x.pyc")))

    def test_copy_keeps_modes_mtimes_and_hard_links(self):
        src = os.path.join(self.src_root, "tree")
        os.makedirs(src)
        a = os.path.join(src, "a")
        with open(a, "w") as f:
            f.write("a")
        os.chmod(a, 0o750)
        os.utime(a, (1_600_000_000, 1_600_000_000))
        os.link(a, os.path.join(src, "a-hard"))
        dst = os.path.join(self.dst_root, "tree")
        self.yeet(src, "--dst", dst, "--copy")
        st, st2 = os.stat(os.path.join(dst, "a")), os.stat(os.path.join(dst, "a-hard"))
        self.assertEqual(st.st_mode & 0o777, 0o750)
        self.assertEqual(int(st.st_mtime), 1_600_000_000)
        self.assertEqual(st.st_ino, st2.st_ino)

    def test_plain_directories_are_not_patched(self):
        src = os.path.join(self.src_root, "notes")
        os.makedirs(os.path.join(src, "bin"))
        script = os.path.join(src, "bin", "tool")
        with open(script, "w") as f:
            f.write(f"#!{src}/bin/python\n")
        dst = os.path.join(self.dst_root, "notes")
        out = self.yeet(src, "--dst", dst).stdout
        self.assertIn(f"Synced to {dst}/ on 1 node", out)
        self.assertEqual(open(os.path.join(dst, "bin", "tool")).read(), f"#!{src}/bin/python\n")

    def test_conda_env_text_rewritten_binary_reported(self):
        src = os.path.join(self.src_root, "conda")
        os.makedirs(os.path.join(src, "conda-meta"))
        os.makedirs(os.path.join(src, "etc"))
        with open(os.path.join(src, "etc", "config.sh"), "w") as f:
            f.write(f"export P={src}/lib\n")
        blob = b"\x7fELF\0\0" + src.encode() + b"/lib\0rest"
        with open(os.path.join(src, "libblob.so"), "wb") as f:
            f.write(blob)
        dst = os.path.join(self.dst_root, "conda")
        proc = self.yeet(src, "--dst", dst, "--json")
        info = json.loads(proc.stdout)
        self.assertEqual(info["env"], "conda")
        self.assertEqual(open(os.path.join(dst, "etc", "config.sh")).read(), f"export P={dst}/lib\n")
        self.assertEqual(open(os.path.join(dst, "libblob.so"), "rb").read(), blob)
        self.assertEqual(info["binary_prefix"], ["libblob.so"])
        self.assertIn("libblob.so", proc.stderr)

    def test_progress_on_a_terminal_only(self):
        src = os.path.join(self.src_root, "big")
        os.makedirs(src)
        with open(os.path.join(src, "blob"), "wb") as f:
            f.write(os.urandom(8 << 20))
        dst = os.path.join(self.dst_root, "big")
        cmd = f"{EZPZ} yeet '{src}' --dst \"{dst}\" --copy"
        tty = subprocess.run(["script", "-qec", cmd, "/dev/null"], env=self.env, capture_output=True, text=True,
                             timeout=60).stdout
        self.assertRegex(tty, r"copying  [0-9.]+ [KMG]?B / 8\.4 MB")
        self.assertIn("ok ", tty)
        plain = self.yeet(src, "--dst", dst, "--copy")
        self.assertNotIn("copying", plain.stdout + plain.stderr)

    def test_dry_run_transfers_nothing(self):
        venv = make_venv(self.src_root)
        dst = os.path.join(self.dst_root, "dry")
        out = self.yeet(venv, "--dst", dst, "--dry-run").stdout
        self.assertIn("[dry-run] nothing transferred", out)
        self.assertIn(f"Source: {venv}", out)
        self.assertFalse(os.path.exists(dst))
        self.assertEqual(os.listdir(self.dst_root), [])

    def test_usage_errors(self):
        src = os.path.join(self.src_root, "d")
        os.makedirs(src)
        proc = self.yeet(src, "--src", src, check=2)
        self.assertIn("--src and positional SRC are mutually exclusive", proc.stderr)
        self.assertIn("does not exist", self.yeet(os.path.join(self.src_root, "nope"), check=2).stderr)
        notar = os.path.join(self.src_root, "file.txt")
        open(notar, "w").close()
        self.assertIn("not a .tar.gz", self.yeet(notar, check=2).stderr)
        self.assertIn("--force", self.yeet(src, "--dst", os.path.join(self.src_root, "out"), check=2).stderr)
        self.assertIn("refusing to replace /", self.yeet(src, "--dst", "/", check=2).stderr)
        home = dict(self.env, HOME=os.path.join(self.dst_root, "home"))
        self.assertIn("home directory", self.yeet(src, "--dst", home["HOME"], check=2, env=home).stderr)
        self.assertIn("inside the source", self.yeet(src, "--dst", os.path.join(src, "x"), "--force", check=2).stderr)
        forced = os.path.join(self.src_root, "forced")
        self.yeet(src, "--dst", forced, "--force")
        self.assertTrue(os.path.isdir(forced))

    def test_configured_roots(self):
        src = os.path.join(self.src_root, "d")
        os.makedirs(src)
        cfg = self.write("cfg.toml", f'[yeet]\nallowed_roots = ["{self.src_root}/scratch"]\n')
        env = dict(self.env, EZPZ_CONFIG=cfg)
        self.yeet(src, "--dst", os.path.join(self.src_root, "scratch", "d"), env=env)
        bad = self.write("bad.toml", '[yeet]\nallowed_root = ["/x"]\n')
        proc = self.yeet(src, "--dst", "/tmp/x", check=2, env=dict(self.env, EZPZ_CONFIG=bad))
        self.assertIn("bad.toml:2: key 'allowed_root'", proc.stderr)

    def test_configured_transport(self):
        # [yeet] transport decides where no flag does, for yeet, kill --all-nodes and doctor --nodes.
        src = os.path.join(self.src_root, "d")
        os.makedirs(src)
        self.write("bin/srun", "#!/bin/sh\nexit 0\n", 0o755)
        job = dict(self.env, PATH=os.path.join(self.tmp, "bin") + ":" + self.env["PATH"], EZPZ_MACHINE="local",
                   SLURM_JOB_ID="7", SLURM_NODELIST="n[1-3]")

        def plan(cfg, *flags):
            out = self.yeet(src, "--dst", "/tmp/ezpz-e2e-cfg", "--dry-run", "--json", *flags,
                            env=dict(job, EZPZ_CONFIG=cfg)).stdout
            r = json.loads(out)
            return r["transport_kind"], r["transport_why"]

        ssh = self.write("ssh.toml", '[yeet]\ntransport = "ssh"\n')
        self.assertEqual(plan(ssh), ("ssh", f'transport = "ssh" in {ssh}'))
        kind, why = plan(ssh, "--transport", "launcher")  # the flag wins
        self.assertEqual(kind, "launcher")
        self.assertTrue(why.startswith("--transport launcher: slurm job"), why)
        kind, why = plan(self.write("auto.toml", '[yeet]\ntransport = "auto"\n'))
        self.assertEqual(kind, "launcher")
        self.assertTrue(why.startswith("auto: slurm job"), why)
        # Outside a job, a configured launcher transport has nothing to do for a copy on this node
        # alone, and is refused, naming the file, where other nodes are named.
        launcher = self.write("launcher.toml", '[yeet]\ntransport = "launcher"\n')
        hosts = self.write("hosts", "h1\nh2\n")
        outside = dict(self.env, EZPZ_CONFIG=launcher, EZPZ_MACHINE="local")
        here = os.path.join(self.dst_root, "here")
        self.yeet(src, "--dst", here, env=outside)
        self.assertTrue(os.path.isdir(here))
        proc = self.yeet(src, "--dst", here, "--hostfile", hosts, "--dry-run", check=2, env=outside)
        self.assertIn(f'transport = "launcher" in {launcher}: no PBS or Slurm job here', proc.stderr)
        proc = run(["kill", "--all-nodes", "--hostfile", hosts, "nothing"], outside, check=2)
        self.assertIn(f'transport = "launcher" in {launcher}: no PBS or Slurm job here', proc.stderr)
        proc = run(["doctor", "--nodes", "--hostfile", hosts, "--json"], outside, check=None)
        nodes = [c for c in json.loads(proc.stdout)["checks"] if c["name"] == "nodes"][0]
        self.assertIn(f'transport = "launcher" in {launcher}: no PBS or Slurm job here', nodes["message"])
        # A value that is none of them: the file, the line, the key and what it may be; exit 2.
        bad = self.write("bad.toml", '[yeet]\ntransport = "scp"\n')
        proc = self.yeet(src, "--dst", "/tmp/ezpz-e2e-cfg", "--dry-run", check=2, env=dict(job, EZPZ_CONFIG=bad))
        self.assertIn(f"{bad}:2: key 'transport' must be one of \"auto\", \"launcher\", \"ssh\"", proc.stderr)


class Hostile(TempDirTest):
    """Archives that try to write outside the destination, or are broken: refused, nothing written
    outside, the previous destination intact, no staging left behind."""

    def setUp(self):
        super().setUp()
        self.dst_parent = __import__("tempfile").mkdtemp(prefix="ezpz-hostile-", dir="/tmp")
        self.dst = os.path.join(self.dst_parent, "env")
        os.makedirs(self.dst)
        with open(os.path.join(self.dst, "old"), "w") as f:
            f.write("previous")
        with open(os.path.join(self.dst, ".ezpz-yeet"), "w") as f:  # an earlier yeet's copy
            f.write("{}\n")
        self.outside = os.path.join(self.dst_parent, "outside")

    def tearDown(self):
        shutil.rmtree(self.dst_parent, ignore_errors=True)
        super().tearDown()

    def archive(self, name, members, mode="w:gz"):
        path = os.path.join(self.tmp, name)
        with tarfile.open(path, mode) as t:
            for info, data in members:
                t.addfile(info, io.BytesIO(data) if data is not None else None)
        return path

    def member(self, name, data=b"x", kind=tarfile.REGTYPE, target=""):
        info = tarfile.TarInfo(name)
        info.type = kind
        info.linkname = target
        info.size = len(data) if kind == tarfile.REGTYPE else 0
        return info, data if kind == tarfile.REGTYPE else None

    def refused(self, path, needle):
        proc = run(["yeet", path, "--dst", self.dst], base_env(), check=1)
        self.assertIn(needle, proc.stderr)
        self.assertEqual(proc.stderr.count("ezpz: error:"), 1)
        self.assertEqual(sorted(os.listdir(self.dst_parent)), ["env"], "staging or files left beside the destination")
        self.assertEqual(open(os.path.join(self.dst, "old")).read(), "previous")
        self.assertFalse(os.path.exists(self.outside))
        self.assertFalse(os.path.exists("/etc/ezpz-hostile"))
        return proc

    def test_dotdot(self):
        self.refused(self.archive("dotdot.tar.gz", [self.member("env/ok"), self.member("../outside")]),
                     "'../outside'")

    def test_absolute(self):
        self.refused(self.archive("abs.tar.gz", [self.member("/etc/ezpz-hostile")]), "absolute path")

    def test_symlink_then_write_through_it(self):
        path = self.archive("through.tar.gz", [self.member("env/", kind=tarfile.DIRTYPE),
                                               self.member("env/evil", kind=tarfile.SYMTYPE, target="/etc"),
                                               self.member("env/evil/ezpz-hostile")])
        self.refused(path, "env/evil/ezpz-hostile")

    def test_relative_symlink_escape(self):
        path = self.archive("rel.tar.gz", [self.member("env/up", kind=tarfile.SYMTYPE, target="../../outside")])
        self.refused(path, "leads outside the destination")

    def test_truncated(self):
        big = self.archive("big.tar.gz", [self.member("env/a", os.urandom(200_000)), self.member("env/b", b"b")])
        data = open(big, "rb").read()
        cut = os.path.join(self.tmp, "cut.tar.gz")
        with open(cut, "wb") as f:
            f.write(data[: len(data) // 2])
        self.refused(cut, "truncated")

    def test_not_an_archive(self):
        path = os.path.join(self.tmp, "junk.tar")
        with open(path, "wb") as f:
            f.write(b"this is not a tar archive at all\n" * 100)
        self.refused(path, "not a tar archive")


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
        for _ in range(6000):
            if sorted(os.listdir(folder)) != left or proc.poll() is not None:
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
