"""ezpz yeet and tar-env on one node, with real venvs, real tarballs and hostile archives (what goes
wrong mid-copy: test_yeet_interrupted.py)."""
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from ezpz_e2e import EZPZ, SOURCE_DIR, TempDirTest, base_env, main, run  # noqa: E402

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

    def test_default_destination_is_the_users_and_the_sources(self):
        src = os.path.join(self.src_root, "ezpz-yeet-default-name")
        os.makedirs(src)
        with open(os.path.join(src, "f"), "w") as f:
            f.write("data")
        user = "ezpz-e2e-" + os.path.basename(self.tmp)  # a /tmp/<user> no one else uses
        env = dict(self.env, USER=user)
        try:
            where = run(["yeet", src, "--where"], env, check=0).stdout.strip()
            self.assertRegex(where, rf"^/tmp/{user}/ezpz-yeet-default-name-[0-9a-f]{{8}}$")
            self.assertFalse(os.path.exists(where), "--where copies nothing")
            proc = self.yeet(src, "--json", env=env)
            self.assertEqual(json.loads(proc.stdout)["destination"], where)
            self.assertEqual(open(os.path.join(where, "f")).read(), "data")
            self.assertEqual(os.stat(f"/tmp/{user}").st_mode & 0o777, 0o700, "the user's folder is private")
        finally:
            shutil.rmtree(f"/tmp/{user}", ignore_errors=True)

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


if __name__ == "__main__":
    main(verbosity=2)
