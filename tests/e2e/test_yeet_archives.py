"""Tarball sources: verified from the source on (flipped bits and truncation under gzip, zstd and
xz refused; tar-env's archives check themselves), and hostile entries refused or made harmless
(FIFOs, devices, setuid and 0777 modes, symlink chains, names past the limits, a zstd bomb
against a small tmpfs, members stored twice, ESC in names), as root and as an unprivileged user.
Each refusal: exit 1, one error line, the old destination kept, nothing beside it."""
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "data"))
from ezpz_e2e import EZPZ, TempDirTest, base_env, main, run  # noqa: E402
import hostile_archives as H  # noqa: E402

NOBODY = 65534


class ArchiveCase(TempDirTest):
    def setUp(self):
        super().setUp()
        os.chmod(self.tmp, 0o755)
        self.dst_parent = tempfile.mkdtemp(prefix="ezpz-arch-", dir="/tmp")
        self.dst = os.path.join(self.dst_parent, "env")
        self.previous_copy()

    def previous_copy(self):
        # What an earlier yeet left: its tree and its marker (yeet replaces only its own copies).
        os.makedirs(self.dst)
        with open(os.path.join(self.dst, "old"), "w") as f:
            f.write("previous")
        with open(os.path.join(self.dst, ".ezpz-yeet"), "w") as f:
            f.write("{}\n")

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.dst_parent])
        super().tearDown()

    def save(self, name, data):
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, 0o644)
        return path

    def yeet(self, path, *extra, as_user=None, timeout=60):
        argv = [EZPZ, "yeet", path, "--dst", self.dst, *extra]
        env = base_env()
        if as_user is not None:
            home = tempfile.mkdtemp(prefix="ezpz-home-", dir="/tmp")
            os.chown(home, as_user, as_user)
            os.chown(self.dst_parent, as_user, as_user)
            os.chown(self.dst, as_user, as_user)
            env["HOME"] = home
            argv = ["setpriv", f"--reuid={as_user}", f"--regid={as_user}", "--clear-groups", *argv]
        return subprocess.run(argv, env=env, capture_output=True, timeout=timeout)

    def assert_unchanged(self):
        self.assertEqual(sorted(os.listdir(self.dst_parent)), ["env"], "work files left beside the destination")
        self.assertEqual(sorted(os.listdir(self.dst)), [".ezpz-yeet", "old"])

    def refused(self, path, needle, *extra, as_user=None):
        proc = self.yeet(path, *extra, as_user=as_user)
        err = proc.stderr.decode(errors="replace")
        self.assertEqual(proc.returncode, 1, err)
        self.assertIn(needle, err)
        self.assertEqual(err.count("ezpz: error:"), 1, err)
        self.assert_unchanged()
        # The same refusal with --json: one object on stdout, the same exit code, nothing changed.
        proc = self.yeet(path, *extra, "--json", as_user=as_user)
        self.assertEqual(proc.returncode, 1)
        report = json.loads(proc.stdout)
        self.assertFalse(report["ok"])
        self.assertIn(needle, report["error"])
        self.assertIn(self.dst, report["unchanged"])
        self.assert_unchanged()
        return err

    def accepted(self, path, *extra, as_user=None):
        proc = self.yeet(path, *extra, as_user=as_user)
        err = proc.stderr.decode(errors="replace")
        self.assertEqual(proc.returncode, 0, err)
        self.assertEqual(sorted(p for p in os.listdir(self.dst_parent)), ["env"])
        return err


class Integrity(ArchiveCase):
    raw = H.tar_bytes(H.venv_members())

    def test_flipped_bits_are_refused_and_whole_archives_pass(self):
        for kind in ("gz", "zst", "xz"):
            with self.subTest(kind=kind):
                good = H.compress(self.raw, kind)
                err = self.accepted(self.save(f"good.tar.{kind}", good))
                self.assertNotIn("checksum", err)
                with open(os.path.join(self.dst, "lib", "f007.bin"), "rb") as f:
                    self.assertEqual(len(f.read()), 24 << 10)
                shutil.rmtree(self.dst)
                self.previous_copy()
                self.refused(self.save(f"bad.tar.{kind}", H.flip_bit(good)), "is damaged")

    def test_truncated_archives_are_refused(self):
        for kind in ("gz", "zst", "xz"):
            with self.subTest(kind=kind):
                good = H.compress(self.raw, kind)
                # Cut only the trailer: the tar itself is whole, the gzip size/CRC (or the
                # zstd checksum, the xz index) is missing.
                for name, data in ((f"cut.tar.{kind}", good[:-6]), (f"half.tar.{kind}", good[:len(good) // 2])):
                    err = self.refused(self.save(name, data), "")
                    self.assertRegex(err, "truncated|damaged")

    def test_no_checksum_gives_one_warning(self):
        for name, data in (("nock.tar.zst", H.compress(self.raw, "zst", checksum=False)),
                           ("nock.tar.xz", H.compress(self.raw, "xz", checksum=False)),
                           ("plain.tar", self.raw)):
            with self.subTest(name=name):
                err = self.accepted(self.save(name, data))
                self.assertEqual(err.count("damage to it cannot be detected"), 1, err)
                shutil.rmtree(self.dst)

    def test_sha256_beside_the_archive_is_verified(self):
        data = H.compress(self.raw, "zst", checksum=False)
        path = self.save("sum.tar.zst", data)
        subprocess.run(f"cd {self.tmp} && sha256sum sum.tar.zst > sum.tar.zst.sha256", shell=True, check=True)
        err = self.accepted(path)
        self.assertNotIn("cannot be detected", err)
        shutil.rmtree(self.dst)
        self.previous_copy()
        # Damage the frame checks cannot see (no frame checksum): the SHA-256 does.
        self.save("sum.tar.zst", H.flip_bit(data, 0.3))
        self.refused(path, "SHA-256")

    def test_tar_env_archives_check_themselves(self):
        src = os.path.join(self.tmp, "venv")
        os.makedirs(os.path.join(src, "bin"))
        with open(os.path.join(src, "bin", "activate"), "w") as f:
            f.write('VIRTUAL_ENV="%s"\n' % src)
        with open(os.path.join(src, "blob"), "wb") as f:
            f.write(os.urandom(300 << 10))
        for fmt, ext in (("zst", "tar.zst"), ("gz", "tar.gz")):
            with self.subTest(fmt=fmt):
                out = os.path.join(self.tmp, f"venv.{ext}")
                run(["tar-env", src, "-o", out, "--format", fmt], base_env(), check=0)
                self.assertEqual(subprocess.run(["sha256sum", "-c", f"venv.{ext}.sha256"], cwd=self.tmp,
                                                capture_output=True).returncode, 0)
                if fmt == "zst":
                    listing = subprocess.run(["zstd", "-lv", out], capture_output=True, text=True).stdout
                    self.assertIn("XXH64", listing)
                self.assertNotIn("cannot be detected", self.accepted(out))
                shutil.rmtree(self.dst)
                self.previous_copy()
                with open(out, "rb") as f:
                    data = f.read()
                with open(out, "wb") as f:
                    f.write(H.flip_bit(data))
                self.refused(out, "is damaged")


class LeftOut(TempDirTest):
    """yeet and tar-env leave __pycache__ out alike, and say what they left out."""

    def test_pycache_left_out_and_said_by_yeet_and_tar_env(self):
        env_dir = os.path.join(self.tmp, "venv")
        for sub in ("lib/pkg/__pycache__", "lib/other/__pycache__/deeper"):
            os.makedirs(os.path.join(env_dir, sub))
        self.write("venv/lib/pkg/mod.py", "x = 1\n")
        self.write("venv/lib/pkg/__pycache__/mod.cpython-311.pyc", "p" * 3000)
        self.write("venv/lib/other/__pycache__/deeper/a.pyc", "q" * 1000)
        env = base_env()
        dst = os.path.join(self.tmp, "copy")
        report = json.loads(run(["yeet", env_dir, "--dst", dst, "--force", "--json"], env, check=0).stdout)
        self.assertEqual(report["left_out"], {"names": ["__pycache__"], "dirs": 2, "files": 2, "bytes": 4000})
        self.assertEqual(report["files"], 1)
        self.assertFalse(os.path.exists(os.path.join(dst, "lib/pkg/__pycache__")))
        text = run(["yeet", env_dir, "--dst", dst, "--force", "--dry-run"], env, check=0).stdout
        self.assertIn("left out: 2 __pycache__ directories (2 files, ", text)
        # tar-env: the same policy, said the same way; --include-pycache packs them.
        out = os.path.join(self.tmp, "env.tar.zst")
        packed = run(["tar-env", env_dir, "-o", out], env, check=0).stdout
        self.assertIn("left out: 2 __pycache__ directories", packed)
        names = subprocess.run(["tar", "--zstd", "-tf", out], capture_output=True, text=True, check=True).stdout
        self.assertNotIn("__pycache__", names)
        summary = json.loads(run(["tar-env", env_dir, "-o", out, "--rebuild", "--include-pycache", "--json"],
                                 env, check=0).stdout)
        self.assertEqual(summary["left_out"]["dirs"], 0)
        names = subprocess.run(["tar", "--zstd", "-tf", out], capture_output=True, text=True, check=True).stdout
        self.assertIn("venv/lib/pkg/__pycache__/mod.cpython-311.pyc", names)


class Entries(ArchiveCase):
    def both_users(self):
        return ((None, "root"), (NOBODY, "nobody"))

    def test_fifo_socket_and_devices_are_refused_without_hanging(self):
        cases = [("fifo", H.member("env/bin/activate", kind=tarfile.FIFOTYPE), "FIFO"),
                 ("chr", H.member("env/mem", kind=tarfile.CHRTYPE, mode=0o666, devmajor=1, devminor=1),
                  "character device"),
                 ("blk", H.member("env/sda", kind=tarfile.BLKTYPE, mode=0o666, devmajor=8), "block device")]
        for user, who in self.both_users():
            for name, entry, needle in cases:
                with self.subTest(entry=name, user=who):
                    path = self.save(f"{name}.tar.gz", H.compress(
                        H.tar_bytes([H.directory("env"), H.directory("env/bin"), entry]), "gz"))
                    self.refused(path, needle, as_user=user)

    def test_modes_cannot_widen_access(self):
        members = [H.directory("env", 0o777), H.directory("env/bin", 0o777),
                   H.member("env/bin/python", b"#!/bin/sh\n", mode=0o4777),
                   H.member("env/bin/tool", b"x", mode=0o2775), H.member("env/data", b"x", mode=0o666)]
        path = self.save("modes.tar.gz", H.compress(H.tar_bytes(members), "gz"))
        for user, who in self.both_users():
            with self.subTest(user=who):
                self.accepted(path, as_user=user)
                for rel in ("", "bin", "bin/python", "bin/tool", "data"):
                    st = os.lstat(os.path.join(self.dst, rel))
                    self.assertEqual(st.st_mode & (stat.S_ISUID | stat.S_ISGID | 0o022), 0,
                                     f"{rel or '.'}: {oct(st.st_mode)}")
                self.assertTrue(os.lstat(os.path.join(self.dst, "bin/python")).st_mode & 0o100)
                subprocess.run(["rm", "-rf", self.dst])
                os.makedirs(self.dst)

    def test_symlinks_are_resolved_through_the_tree(self):
        bad = {
  "chain": [H.directory("env"), H.directory("env/a"), H.symlink("env/a/cur", "."),
                      H.symlink("env/a/par", "cur/../..")],
            "forward": [H.directory("env"), H.symlink("env/x", "f/.."), H.symlink("env/f", ".")],
            "replaced": [H.directory("env"), H.directory("env/d"), H.symlink("env/l", "d"),
                         H.symlink("env/x", "l/.."), H.symlink("env/l", ".")],
            "hardlinked": [H.directory("env"), H.directory("env/a"), H.directory("env/a/b"),
                           H.symlink("env/a/b/s", "../x"), H.hardlink("env/s", "env/a/b/s")],
            "loop": [H.directory("env"), H.symlink("env/p", "q/x"), H.symlink("env/q", "p/y")],
            # A file, then a directory under its name, then a link: the file never becomes the
            # lifted top that hides the link's escape.
            "under-a-file": [H.member("env", b"x"), H.directory("env/d"), H.symlink("env/l", "../outside")],
        }
        for name, members in bad.items():
            with self.subTest(case=name):
                self.refused(self.save(f"{name}.tar", H.tar_bytes(members)), "symlink" if name != "under-a-file"
                             else "lies under a file")
        good = [H.directory("env"), H.directory("env/lib"), H.symlink("env/lib64", "lib"),
                H.directory("env/bin"), H.symlink("env/bin/py", "../lib64/python"),
                H.symlink("env/bin/python3", "/usr/bin/python3")]
        self.accepted(self.save("good.tar", H.tar_bytes(good)))
        self.assertEqual(os.readlink(os.path.join(self.dst, "bin/py")), "../lib64/python")

    def test_nothing_is_written_through_a_link_of_the_archive(self):
        # Into an empty destination the guard alone stops these (libarchive's walk of every path
        # component on disk runs only where something was there before): nothing lands outside.
        outside = os.path.join(self.tmp, "outside")
        os.makedirs(outside)
        cases = {
            "absolute": [H.directory("env"), H.symlink("env/l", outside), H.member("env/l/planted", b"x")],
            "relative": [H.directory("env"), H.directory("env/d"), H.symlink("env/l", "d"),
                         H.member("env/l/planted", b"x")],
            "hardlink": [H.directory("env"), H.symlink("env/l", outside), H.member("env/f", b"x"),
                         H.hardlink("env/l/planted", "env/f")],
        }
        for name, members in cases.items():
            with self.subTest(case=name):
                self.refused(self.save(f"{name}.tar", H.tar_bytes(members)), "lies under a symlink of the archive")
                self.assertEqual(os.listdir(outside), [])

    def test_names_past_the_limits_are_refused_quickly(self):
        err = self.refused(self.save("long.tar", H.tar_bytes([H.member(H.deep_name(20, "x" * 250))])),
                           "bytes, past the limit")
        self.assertLess(len(err), 600, "the name is shortened in the message")
        self.refused(self.save("longer.tar", H.tar_bytes([H.member(H.deep_name(3000))])), "directories deep")
        self.refused(self.save("deep.tar", H.tar_bytes([H.member(H.deep_name(300))])), "directories deep")

    def test_members_stored_twice_the_last_wins(self):
        members = [H.directory("env"), H.member("env/f", b"first"), H.member("env/f", b"second"),
                   H.member("env/l", b"file"), H.symlink("env/l", "f"),
                   H.symlink("env/m", "f"), H.member("env/m", b"now a file"),
                   H.member("env/d", b"file"), H.directory("env/d"), H.member("env/d/inner", b"in")]
        self.accepted(self.save("dup.tar", H.tar_bytes(members)))
        with open(os.path.join(self.dst, "f"), "rb") as f:
            self.assertEqual(f.read(), b"second")
        self.assertEqual(os.readlink(os.path.join(self.dst, "l")), "f")
        self.assertFalse(os.path.islink(os.path.join(self.dst, "m")))
        self.assertTrue(os.path.isfile(os.path.join(self.dst, "d", "inner")))
        subprocess.run(["rm", "-rf", self.dst])
        self.previous_copy()
        self.refused(self.save("dirfile.tar", H.tar_bytes([H.directory("env"), H.directory("env/d"),
                                                           H.member("env/d", b"x")])), "stored twice")

    def test_control_bytes_in_names_are_escaped(self):
        err = self.refused(self.save("esc.tar", H.tar_bytes([H.directory("env"), H.member("../\x1b[2Jevil")])),
                           "\\x1b[2Jevil")
        self.assertNotIn("\x1b", err)
        err = self.refused(self.save("empty.tar", H.tar_bytes([H.member("")], fmt=tarfile.GNU_FORMAT)), "empty")
        self.assertNotIn("absolute", err)


class OwnArchives(ArchiveCase):
    def test_compress_keeps_a_directory_as_it_is(self):
        """--compress packs and extracts a tree of this node: its modes and links stay as they are."""
        src = os.path.join(self.tmp, "src", "env")
        os.makedirs(os.path.join(src, "a"))
        with open(os.path.join(src, "shared.txt"), "w") as f:
            f.write("group-writable on purpose")
        os.chmod(os.path.join(src, "shared.txt"), 0o664)
        os.symlink("../data", os.path.join(src, "data"))
        os.symlink(".", os.path.join(src, "a", "cur"))
        self.accepted(src, "--compress")
        self.assertEqual(os.lstat(os.path.join(self.dst, "shared.txt")).st_mode & 0o777, 0o664)
        self.assertEqual(os.readlink(os.path.join(self.dst, "data")), "../data")


class Size(ArchiveCase):
    def test_max_bytes(self):
        path = self.save("two.tar.gz", H.compress(H.tar_bytes(H.venv_members(files=90)), "gz"))
        self.refused(path, "--max-bytes", "--max-bytes", "1M")
        self.accepted(path, "--max-bytes", "10M")

    def test_a_bomb_against_a_small_tmpfs_leaves_nothing(self):
        bomb = self.save("bomb.tar.zst", H.bomb_zst(256 << 20))
        self.assertLess(os.path.getsize(bomb), 1 << 20)
        # A private 32 MiB tmpfs over the destination's parent: the bomb must be refused before
        # it fills it, and nothing may be left in it.
        script = ('mount -t tmpfs -o size=32m tmpfs "$1" && mkdir "$1/env" && echo previous > "$1/env/old" && '
                  'echo {} > "$1/env/.ezpz-yeet" && "$2" yeet "$3" --dst "$1/env" >&2; rc=$?; ls -A "$1"; ls -A "$1/env"; df -k "$1" | tail -1; exit $rc')
        proc = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh",
                               self.dst_parent, EZPZ, bomb], env=base_env(), capture_output=True, text=True,
                              timeout=120)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("free on the filesystem", proc.stderr)
        lines = proc.stdout.split("\n")
        self.assertEqual(lines[0:3], ["env", ".ezpz-yeet", "old"], proc.stdout)
        used_kb = int(lines[3].split()[2])
        self.assertLess(used_kb, 1024, proc.stdout)


if __name__ == "__main__":
    main(verbosity=2)
