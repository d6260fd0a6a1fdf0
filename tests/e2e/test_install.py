"""One line to install, verified (issue #58): scripts/release.sh's output served over HTTP on
127.0.0.1, installed by install.sh as a file and through a pipe; refused inside a job; a tampered
tarball, a server down, a 404, a full disk and plain HTTP to another machine each refused in one
line with nothing written and a previous install unchanged. Then `ezpz self-update`: --check, an
update to a newer release and a rollback, refusals. The release build's (static binary).

The newer release is this build with its version made 9.1.0 for 0.1.0 (the bytes of the one "0.1.0" in the
binary, cli/version_stamp.cpp, which everything that reports the version reads: a second release
build would take 20 minutes): a real binary that reports a higher version, packed and listed as
release.sh does."""
import gzip
import hashlib
import io
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
import time
import unittest

from ezpz_e2e import EZPZ, SOURCE_DIR, base_env, main

RELEASE = os.path.join(SOURCE_DIR, "scripts", "release.sh")
BUILD_DIR = os.environ.get("EZPZ_BUILD_DIR", os.path.dirname(EZPZ))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Served(unittest.TestCase):
    """scripts/release.sh's output served on 127.0.0.1; a private prefix and TMPDIR for each test."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ezpz-install-")
        cls.served = os.path.join(cls.tmp, "www")
        cls.release = os.path.join(cls.served, "latest")
        made = subprocess.run(["bash", RELEASE, cls.release, "--build", BUILD_DIR], capture_output=True, text=True)
        assert made.returncode == 0, made.stdout + made.stderr
        cls.version = subprocess.run([EZPZ, "--version"], capture_output=True, text=True).stdout.split()[1]
        cls.tarball = f"ezpz-{cls.version}-linux-{os.uname().machine}.tar.gz"
        cls.port = free_port()
        cls.server = subprocess.Popen(["python3", "-m", "http.server", "--bind", "127.0.0.1", str(cls.port),
                                       "--directory", cls.served], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cls.base = f"http://127.0.0.1:{cls.port}/latest"
        deadline = time.monotonic() + 60
        while True:  # wait until it answers
            try:
                socket.create_connection(("127.0.0.1", cls.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.server.wait()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.work = tempfile.mkdtemp(dir=self.tmp)
        self.prefix = os.path.join(self.work, "prefix")
        self.env = base_env(EZPZ_INSTALL_BASE_URL=self.base, TMPDIR=self.work)

    def install(self, *args, env=None, script=None, stdin=None):
        script = script or os.path.join(self.release, "install.sh")
        return subprocess.run(["sh", script, "--prefix", self.prefix, *args], env=env or self.env,
                              capture_output=True, text=True, input=stdin, timeout=120)

    def assert_refused(self, proc, words):
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        lines = proc.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, proc.stderr)
        for w in words:
            self.assertIn(w, lines[0])

    def assert_no_leftovers(self):
        left = [n for n in os.listdir(self.work) if n.startswith("ezpz-install.")]
        if os.path.isdir(self.prefix):
            left += [n for n in os.listdir(self.prefix) if n.startswith(".ezpz-install")]
        self.assertEqual(left, [], "work left behind")


class Install(Served):
    def test_release_holds_a_verified_tarball_and_the_installer(self):
        with open(os.path.join(self.release, "SHA256SUMS")) as f:
            sums = dict(reversed(line.split()) for line in f)
        self.assertEqual(sorted(sums), sorted([self.tarball, "install.sh"]))
        for name, digest in sums.items():
            self.assertEqual(sha256(os.path.join(self.release, name)), digest, name)
        names = subprocess.run(["tar", "-tzf", os.path.join(self.release, self.tarball)], capture_output=True,
                               text=True, check=True).stdout.split()
        top = self.tarball[:-len(".tar.gz")]
        for want in ("bin/ezpz", "LICENSE", "share/man/man1/ezpz.1", "share/bash-completion/completions/ezpz",
                     "share/fish/vendor_completions.d/ezpz.fish"):
            self.assertIn(f"{top}/{want}", names)

    def test_installs_from_the_file_and_through_a_pipe(self):
        proc = self.install()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        installed = os.path.join(self.prefix, "bin", "ezpz")
        self.assertIn(f"installed ezpz {self.version}", proc.stdout)
        self.assertIn(f'export PATH="{self.prefix}/bin:$PATH"', proc.stdout)  # printed, no rc file edited
        self.assertEqual(os.listdir(self.env["HOME"]), [])
        out = subprocess.run([installed, "--version"], capture_output=True, text=True, check=True).stdout
        self.assertTrue(out.startswith(f"ezpz {self.version} "), out)
        self.assertTrue(os.path.isfile(os.path.join(self.prefix, "share", "man", "man1", "ezpz-launch.1")))
        self.assertFalse(os.path.exists(os.path.join(self.prefix, "share", "bash-completion")))  # not asked
        self.assert_no_leftovers()
        # `curl -fsSL URL/install.sh | sh`: the script on stdin, its options after `-s --`.
        with open(os.path.join(self.release, "install.sh")) as f:
            text = f.read()
        piped = os.path.join(self.work, "piped")
        proc = subprocess.run(["sh", "-s", "--", "--prefix", piped], input=text, env=self.env, capture_output=True,
                              text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sha256(os.path.join(piped, "bin", "ezpz")), sha256(installed))
        # Again over an install: a repair, the same result.
        proc = self.install()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sha256(installed), sha256(os.path.join(piped, "bin", "ezpz")))

    def test_completions_only_when_asked(self):
        env = dict(self.env, XDG_CONFIG_HOME=os.path.join(self.work, "config"), PATH=self.prefix + "/bin:/usr/bin:/bin")
        proc = self.install("--completions", env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("export PATH", proc.stdout)  # already on PATH
        for path in (os.path.join(self.prefix, "share", "bash-completion", "completions", "ezpz"),
                     os.path.join(self.prefix, "share", "zsh", "site-functions", "_ezpz"),
                     os.path.join(self.work, "config", "fish", "completions", "ezpz.fish")):
            self.assertTrue(os.path.isfile(path), path)
            self.assertIn(f"completion: {path}", proc.stdout)

    def test_refused_inside_a_job_with_nothing_written(self):
        for var in ("PBS_JOBID", "SLURM_JOB_ID"):
            proc = self.install(env=dict(self.env, **{var: "4242"}))
            self.assert_refused(proc, [f"inside a batch job ({var}=4242)", "login node", "--force"])
            self.assertFalse(os.path.exists(self.prefix))
            self.assert_no_leftovers()
        proc = self.install("--force", env=dict(self.env, PBS_JOBID="4242"))
        self.assertEqual(proc.returncode, 0, proc.stderr)

    def test_a_tampered_tarball_is_refused_and_the_install_kept(self):
        self.assertEqual(self.install().returncode, 0)
        installed = os.path.join(self.prefix, "bin", "ezpz")
        before = (sha256(installed), os.stat(installed).st_mtime_ns)
        bad = os.path.join(self.served, "tampered")
        shutil.copytree(self.release, bad)
        with open(os.path.join(bad, self.tarball), "r+b") as f:  # one byte of the binary's data changed
            f.seek(os.path.getsize(f.name) // 2)
            byte = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([byte[0] ^ 0xFF]))
        proc = self.install("--base-url", f"http://127.0.0.1:{self.port}/tampered")
        self.assert_refused(proc, [f"SHA-256 of {self.tarball}", "tampered", "nothing installed"])
        self.assertEqual((sha256(installed), os.stat(installed).st_mtime_ns), before)
        self.assert_no_leftovers()

    def test_server_down_404_and_plain_http_elsewhere_say_what_failed(self):
        down = self.install("--base-url", f"http://127.0.0.1:{free_port()}/latest")
        self.assert_refused(down, ["cannot download", "/SHA256SUMS", "nothing installed"])
        missing = self.install("--base-url", f"http://127.0.0.1:{self.port}/nope")
        self.assert_refused(missing, ["cannot download", "/nope/SHA256SUMS", "404"])
        version = self.install("--version", "99.0.0")
        self.assert_refused(version, [f"does not list ezpz-99.0.0-linux-{os.uname().machine}.tar.gz"])
        plain = self.install("--base-url", "http://example.com/ezpz")
        self.assert_refused(plain, ["not HTTPS", "https://"])
        self.assertFalse(os.path.exists(self.prefix))
        self.assert_no_leftovers()

    def test_wget_when_there_is_no_curl(self):
        bin_dir = os.path.join(self.work, "bin")
        os.mkdir(bin_dir)
        for d in ("/usr/bin", "/bin"):
            for name in os.listdir(d):
                if name != "curl" and not os.path.exists(os.path.join(bin_dir, name)):
                    os.symlink(os.path.join(d, name), os.path.join(bin_dir, name))
        env = dict(self.env, PATH=bin_dir)
        proc = self.install(env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        missing = self.install("--base-url", f"http://127.0.0.1:{self.port}/nope", env=env)
        self.assert_refused(missing, ["cannot download", "the server answered with an error"])

    def test_a_full_disk_leaves_the_previous_install(self):
        if os.geteuid() != 0:
            self.fail("needs root to mount a small tmpfs as the full disk: run the e2e tests as root (CI does)")
        os.mkdir(self.prefix)
        listing = subprocess.run(["tar", "-tvzf", os.path.join(self.release, self.tarball)], capture_output=True,
                                 text=True, check=True).stdout.splitlines()
        size = sum(int(line.split()[2]) for line in listing)  # what an install writes, and then some
        size_kib = (size + size // 2) // 1024 + 64  # fits once, not twice
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", self.prefix], check=True)
        try:
            first = self.install()
            self.assertEqual(first.returncode, 0, first.stderr)
            installed = os.path.join(self.prefix, "bin", "ezpz")
            before = sha256(installed)
            with open(os.path.join(self.prefix, "filler"), "wb") as f:  # leave less than a binary's room
                free = os.statvfs(self.prefix).f_bavail * os.statvfs(self.prefix).f_frsize
                f.write(b"\0" * max(0, free - 1_000_000))
            proc = self.install()
            self.assert_refused(proc, ["cannot write to", "disk full", "previous install is unchanged"])
            self.assertEqual(sha256(installed), before)
            self.assert_no_leftovers()
        finally:
            subprocess.run(["umount", self.prefix], check=False)

    def test_a_tarball_already_downloaded(self):
        local = os.path.join(self.work, "dl")
        shutil.copytree(self.release, local)
        proc = subprocess.run(["sh", os.path.join(local, "install.sh"), "--prefix", self.prefix,
                               os.path.join(local, self.tarball)], env=self.env, capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)  # its checksum from SHA256SUMS beside it
        proc = subprocess.run(["sh", os.path.join(local, "install.sh"), "--prefix", self.prefix + "2",
                               os.path.join(local, self.tarball), "0" * 64], env=self.env, capture_output=True,
                              text=True)
        self.assert_refused(proc, ["expected " + "0" * 64])
        self.assertFalse(os.path.exists(self.prefix + "2"))


def make_newer(release, tarball, version, out):
    """A newer release in `out`: the binary of `release`/`tarball` with its version's first number made
    all nines (0.1.0 -> 9.1.0, the same length), packed and listed in SHA256SUMS as release.sh does.
    Returns its version and tarball name."""
    os.mkdir(out)
    old_top = tarball[:-len(".tar.gz")]
    major, rest = version.split(".", 1)
    assert set(major) != {"9"}, "no higher version of the same length"
    newer_version = "9" * len(major) + "." + rest
    new_name = f"ezpz-{newer_version}-linux-{os.uname().machine}.tar.gz"
    new_top = new_name[:-len(".tar.gz")]
    buf = io.BytesIO()
    with tarfile.open(os.path.join(release, tarball)) as old, tarfile.open(fileobj=buf, mode="w") as new:
        for member in old.getmembers():
            data = old.extractfile(member).read() if member.isfile() else None
            if member.name == f"{old_top}/bin/ezpz":
                stamp = version.encode() + b"\x00"
                assert data.count(stamp) == 1, "the version string is not unique"
                data = data.replace(stamp, newer_version.encode() + b"\x00")  # the same length
            member.name = new_top + member.name[len(old_top):]
            if data is not None:
                member.size = len(data)
            new.addfile(member, io.BytesIO(data) if data is not None else None)
    with open(os.path.join(out, new_name), "wb") as f:
        f.write(gzip.compress(buf.getvalue()))
    with open(os.path.join(out, "SHA256SUMS"), "w") as f:
        f.write(f"{sha256(os.path.join(out, new_name))}  {new_name}\n")
    return newer_version, new_name


class Updating(Served):
    """An install to update (from the release), and a newer release beside it."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # A newer release: the same binary reporting a higher version, packed as release.sh packs one.
        cls.newer = os.path.join(cls.served, "newer")
        cls.newer_version, cls.new_name = make_newer(cls.release, cls.tarball, cls.version, cls.newer)
        cls.newer_url = f"http://127.0.0.1:{cls.port}/newer"

    def setUp(self):
        super().setUp()
        proc = self.install()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.ezpz = os.path.join(self.prefix, "bin", "ezpz")

    def update(self, *args, env=None):
        return subprocess.run([self.ezpz, "self-update", *args], env=env or self.env, capture_output=True, text=True,
                              timeout=120)

    def version_of(self, binary):
        return subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout.split()[1]


class SelfUpdate(Updating):
    def test_check_says_whether_a_newer_release_exists(self):
        same = self.update("--check")
        self.assertEqual(same.returncode, 0, same.stderr)
        self.assertIn(f"installed {self.version}, newest {self.version}", same.stdout)
        newer = self.update("--check", "--base-url", self.newer_url, "--json")
        self.assertEqual(newer.returncode, 100, newer.stderr)
        self.assertIn(f'"newest":"{self.newer_version}"', newer.stdout)
        self.assertIn('"update_available":true', newer.stdout)

    def test_update_then_rollback(self):
        before = sha256(self.ezpz)
        proc = self.update("--base-url", self.newer_url)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(f"-> ezpz {self.newer_version} ", proc.stdout)
        self.assertIn("fetched with /usr/bin/curl", proc.stdout)
        self.assertEqual(self.version_of(self.ezpz), self.newer_version)
        self.assertEqual(sha256(self.ezpz + ".old"), before)  # the previous one, kept for one rollback
        self.assertEqual([n for n in os.listdir(os.path.dirname(self.ezpz)) if n.startswith(".ezpz-update")], [])
        again = self.update("--base-url", self.newer_url)  # the newest already: nothing to do
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("is the newest", again.stdout)
        back = self.update("--rollback")
        self.assertEqual(back.returncode, 0, back.stderr)
        self.assertEqual(sha256(self.ezpz), before)
        self.assertEqual(self.version_of(self.ezpz), self.version)
        self.assertFalse(os.path.exists(self.ezpz + ".old"))
        none = self.update("--rollback")
        self.assert_refused(none, ["no previous ezpz to roll back to"])

    def test_refusals_leave_the_binary(self):
        before = (sha256(self.ezpz), os.stat(self.ezpz).st_mtime_ns)
        job = self.update("--base-url", self.newer_url, env=dict(self.env, SLURM_JOB_ID="7"))
        self.assert_refused(job, ["inside a batch job (SLURM_JOB_ID=7)", "--force"])
        plain = self.update("--base-url", "http://example.com/x")
        self.assertEqual(plain.returncode, 2, plain.stderr)
        self.assertIn("not HTTPS", plain.stderr)
        missing = self.update("--version", "9.9.9")
        self.assert_refused(missing, ["does not list ezpz-9.9.9-linux-"])
        tampered = os.path.join(self.served, "newer-tampered")
        if not os.path.isdir(tampered):
            shutil.copytree(self.newer, tampered)
            with open(os.path.join(tampered, self.new_name), "ab") as f:
                f.write(b"x")
        bad = self.update("--base-url", f"http://127.0.0.1:{self.port}/newer-tampered")
        self.assert_refused(bad, [f"SHA-256 of {self.new_name}", "tampered", "nothing replaced"])
        self.assertEqual((sha256(self.ezpz), os.stat(self.ezpz).st_mtime_ns), before)
        self.assertEqual([n for n in os.listdir(os.path.dirname(self.ezpz)) if n.startswith(".ezpz-update")], [])

    def test_a_site_install_is_the_sites_to_update(self):
        if os.geteuid() != 0:
            self.fail("needs root to give the install to another user: run the e2e tests as root (CI does)")
        bin_dir = os.path.dirname(self.ezpz)
        os.chown(bin_dir, 65534, 65534)  # nobody's: a site install, as far as this user is concerned
        proc = self.update("--base-url", self.newer_url)
        self.assert_refused(proc, [f"{bin_dir} is not yours (a site install)", "install.sh | sh"])
        os.chown(bin_dir, 0, 0)
        # A read-only filesystem: the new binary cannot be made beside the old one.
        ro = os.path.join(self.work, "ro")
        os.mkdir(ro)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", ro], check=True)
        try:
            shutil.copy2(self.ezpz, os.path.join(ro, "ezpz"))
            subprocess.run(["mount", "-o", "remount,ro", ro], check=True)
            proc = subprocess.run([os.path.join(ro, "ezpz"), "self-update", "--base-url", self.newer_url],
                                  env=self.env, capture_output=True, text=True, timeout=120)
            self.assert_refused(proc, ["Read-only file system", "beside the old one"])
        finally:
            subprocess.run(["umount", ro], check=False)


def sign(key, sums):
    subprocess.run(["openssl", "pkeyutl", "-sign", "-inkey", key, "-rawin", "-in", sums, "-out", sums + ".sig"],
                   check=True)


class Signed(Updating):
    """Releases signed with a key (release.sh --sign): install.sh carries the key and checks
    SHA256SUMS.sig with openssl; self-update checks it with the key a site pins
    (EZPZ_RELEASE_PUBLIC_KEY) or the build embedded (here: the installed binary's key slot filled
    in, as -DEZPZ_RELEASE_PUBLIC_KEY fills it). A forged release (a tarball replaced and SHA256SUMS
    rewritten to match, as a compromised mirror would) is refused with nothing replaced."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.key = os.path.join(cls.tmp, "release.pem")
        cls.other_key = os.path.join(cls.tmp, "other.pem")
        for k in (cls.key, cls.other_key):
            subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", k], check=True,
                           capture_output=True)
        cls.signed = os.path.join(cls.served, "signed")
        made = subprocess.run(["bash", RELEASE, cls.signed, "--build", BUILD_DIR, "--sign", cls.key],
                              capture_output=True, text=True)
        assert made.returncode == 0, made.stdout + made.stderr
        cls.pub = made.stdout.split("(EZPZ_RELEASE_PUBLIC_KEY): ")[1].split()[0]
        assert len(cls.pub) == 64 and "does not carry the key" in made.stderr, made.stdout + made.stderr
        sign(cls.key, os.path.join(cls.newer, "SHA256SUMS"))  # the newer release, signed
        # Forged: the tarball altered and SHA256SUMS rewritten to match; the signature left as it was.
        cls.forged = os.path.join(cls.served, "forged")
        shutil.copytree(cls.signed, cls.forged)
        cls.forged_newer = os.path.join(cls.served, "forged-newer")
        shutil.copytree(cls.newer, cls.forged_newer)
        for d, name in ((cls.forged, cls.tarball), (cls.forged_newer, cls.new_name)):
            with open(os.path.join(d, name), "ab") as f:
                f.write(b"x")
            with open(os.path.join(d, "SHA256SUMS")) as f:
                lines = [ln for ln in f.read().splitlines() if not ln.endswith("  " + name)]
            with open(os.path.join(d, "SHA256SUMS"), "w") as f:
                f.write("\n".join(lines + [f"{sha256(os.path.join(d, name))}  {name}"]) + "\n")
        cls.unsigned_newer = os.path.join(cls.served, "unsigned-newer")
        shutil.copytree(cls.newer, cls.unsigned_newer)
        os.remove(os.path.join(cls.unsigned_newer, "SHA256SUMS.sig"))

    def url(self, name):
        return f"http://127.0.0.1:{self.port}/{name}"

    def test_install_sh_carries_the_key_and_refuses_a_forged_release(self):
        script = os.path.join(self.signed, "install.sh")
        before = (sha256(self.ezpz), os.stat(self.ezpz).st_mtime_ns)
        with open(script) as f:
            self.assertIn(f"DEFAULT_PUBLIC_KEY={self.pub}", f.read())
        forged = self.install("--base-url", self.url("forged"), script=script)
        self.assert_refused(forged, ["SHA256SUMS.sig is not a signature of SHA256SUMS by the release key",
                                     self.pub[:16], "nothing installed"])
        unsigned = self.install("--base-url", self.url("latest"), script=script)
        self.assert_refused(unsigned, ["cannot download", "/latest/SHA256SUMS.sig", "404"])
        other = self.install("--base-url", self.url("signed"), "--public-key", "ab" * 32, script=script)
        self.assert_refused(other, ["is not a signature of SHA256SUMS by the release key abababab"])
        bad = self.install("--public-key", "1234", script=script)
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn("not an Ed25519 public key as 64 hex digits", bad.stderr)
        self.assertEqual((sha256(self.ezpz), os.stat(self.ezpz).st_mtime_ns), before)
        # The installer without a key is told one on its command line; then the signed release installs.
        pinned = self.install("--base-url", self.url("forged"), "--public-key", self.pub.upper())
        self.assert_refused(pinned, ["is not a signature of SHA256SUMS"])
        # A tarball already downloaded with SHA256SUMS beside it: its signature must be there too.
        local = os.path.join(self.work, "downloaded")
        os.mkdir(local)
        for name in (self.tarball, "SHA256SUMS"):
            shutil.copy(os.path.join(self.signed, name), local)
        alone = self.install(os.path.join(local, self.tarball), script=script)
        self.assert_refused(alone, [f"no {local}/SHA256SUMS.sig beside it", "download SHA256SUMS.sig too"])
        self.assertEqual((sha256(self.ezpz), os.stat(self.ezpz).st_mtime_ns), before)
        shutil.copy(os.path.join(self.signed, "SHA256SUMS.sig"), local)
        beside = self.install(os.path.join(local, self.tarball), script=script)
        self.assertEqual(beside.returncode, 0, beside.stderr)
        good = self.install("--base-url", self.url("signed"), script=script)
        self.assertEqual(good.returncode, 0, good.stderr)
        self.assertIn("installed ezpz", good.stdout)
        self.assert_no_leftovers()

    def test_self_update_with_a_site_pinned_key(self):
        before = (sha256(self.ezpz), os.stat(self.ezpz).st_mtime_ns)
        env = dict(self.env, EZPZ_RELEASE_PUBLIC_KEY=self.pub)
        check = self.update("--check", "--json", "--base-url", self.newer_url, env=env)
        self.assertEqual(check.returncode, 100, check.stderr)
        self.assertIn('"signature":"checked"', check.stdout)
        self.assertIn(f'"release_key":"{self.pub}"', check.stdout)
        for where, words in (("forged-newer", ["SHA256SUMS.sig is not a signature of SHA256SUMS", self.pub[:16],
                                                "nothing replaced"]),
                             ("unsigned-newer", ["cannot download", "/unsigned-newer/SHA256SUMS.sig", "404",
                                                 "takes only releases signed with the release key"])):
            refused = self.update("--base-url", self.url(where), env=env)
            self.assert_refused(refused, words)
        other = self.update("--base-url", self.newer_url, env=dict(self.env, EZPZ_RELEASE_PUBLIC_KEY="cd" * 32))
        self.assert_refused(other, ["is not a signature of SHA256SUMS by the release key cdcdcdcd"])
        malformed = self.update("--check", env=dict(self.env, EZPZ_RELEASE_PUBLIC_KEY="not-a-key"))
        self.assert_refused(malformed, ["EZPZ_RELEASE_PUBLIC_KEY is not an Ed25519 public key"])
        self.assertEqual((sha256(self.ezpz), os.stat(self.ezpz).st_mtime_ns), before)
        self.assertEqual([n for n in os.listdir(os.path.dirname(self.ezpz)) if n.startswith(".ezpz-update")], [])
        unpinned = self.update("--check", "--json", "--base-url", self.url("unsigned-newer"))
        self.assertEqual(unpinned.returncode, 100, unpinned.stderr)  # no key anywhere: nothing to check against
        self.assertIn('"signature":"not checked"', unpinned.stdout)
        updated = self.update("--base-url", self.newer_url, env=env)
        self.assertEqual(updated.returncode, 0, updated.stderr)
        self.assertEqual(self.version_of(self.ezpz), self.newer_version)

    def test_self_update_with_the_key_the_build_embedded(self):
        with open(self.ezpz, "rb") as f:
            data = f.read()
        slot = b"ezpz-release-key:" + b"." * 64
        self.assertEqual(data.count(slot), 1, "the key slot is not in the binary once")
        with open(self.ezpz, "wb") as f:  # as -DEZPZ_RELEASE_PUBLIC_KEY=<pub> builds it
            f.write(data.replace(slot, b"ezpz-release-key:" + self.pub.encode()))
        refused = self.update("--check", "--base-url", self.url("unsigned-newer"))
        self.assert_refused(refused, ["/unsigned-newer/SHA256SUMS.sig", "takes only releases signed"])
        check = self.update("--check", "--base-url", self.newer_url)
        self.assertEqual(check.returncode, 100, check.stderr)
        self.assertIn("signature checked", check.stdout)
        forged = self.update("--base-url", self.url("forged-newer"))
        self.assert_refused(forged, ["is not a signature of SHA256SUMS", "nothing replaced"])
        # A site's pin replaces the embedded key (a mirror that signs with its own).
        site = self.update("--check", "--base-url", self.newer_url,
                           env=dict(self.env, EZPZ_RELEASE_PUBLIC_KEY="ef" * 32))
        self.assert_refused(site, ["by the release key efefefef"])


if __name__ == "__main__":
    main()
