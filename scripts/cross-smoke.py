"""Smoke test of a cross-built ezpz run under qemu-user (scripts/cross-aarch64.sh): its version
line, launch --dry-run under a Slurm and a PBS allocation (the same plans as the x86_64 build's,
field for field, when build/release/ezpz is there), and a yeet of a small tree with a venv's
scripts to a local destination (the copy byte for byte, its paths patched). Exit 0 when all held.
Environment: EZPZ_AARCH64_BIN (the binary), EZPZ_QEMU (qemu-aarch64-static)."""
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

BIN = os.environ["EZPZ_AARCH64_BIN"]
QEMU = os.environ.get("EZPZ_QEMU", "qemu-aarch64-static")
HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.realpath(os.path.join(HERE, "..", "build", "release", "ezpz"))
failed = []


def ezpz(args, env, binary=None):
    argv = [binary, *args] if binary else [QEMU, BIN, *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


def check(what, ok, detail=""):
    print(f"  {'ok  ' if ok else 'FAIL'} {what}" + ("" if ok else f": {detail}"))
    if not ok:
        failed.append(what)


def same_run(text, binary):
    """The launch's own folder (its time and pid) and the binary's path (the rank shim's) made the
    same in two runs."""
    return re.sub(r"launch-[0-9]{8}T[0-9]{6}-[0-9]+", "launch-RUN", text).replace(json.dumps(binary), '"EZPZ"')


def plan(env, *args):
    proc = ezpz(["launch", "--dry-run", "--json", *args, "--", "python3", "-m", "app.train"], env)
    if proc.returncode != 0:
        return None, proc.stderr
    mine = json.loads(same_run(proc.stdout, BIN))
    if os.access(REFERENCE, os.X_OK):
        ref = ezpz(["launch", "--dry-run", "--json", *args, "--", "python3", "-m", "app.train"], env, REFERENCE)
        theirs = json.loads(same_run(ref.stdout, os.path.abspath(REFERENCE)))
        differ = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
        check("the plan is the x86_64 build's, field for field", not differ, f"differs in {differ}")
    return mine, ""


def main():
    tmp = tempfile.mkdtemp(prefix="ezpz-cross-smoke-")
    try:
        base = {"PATH": os.environ["PATH"], "HOME": tmp, "EZPZ_HOME": os.path.join(tmp, "home"), "NO_COLOR": "1",
                "MASTER_PORT": "29500"}
        version = ezpz(["--version"], base).stdout.strip()
        check(f"--version: {version}", version.startswith("ezpz ") and version.endswith(", static, aarch64)"))

        slurm = dict(base, SLURM_JOB_ID="42", SLURM_JOB_NODELIST="frontier[00001-00002]", EZPZ_MACHINE="frontier")
        p, err = plan(slurm)
        check("launch --dry-run under Slurm: srun -N2 -n16 on frontier00001-2",
              p is not None and p["argv"][:3] == ["srun", "-N2", "-n16"] and
              p["hosts"] == ["frontier00001", "frontier00002"], err or p)

        nodefile = os.path.join(tmp, "nodefile")
        with open(nodefile, "w") as f:
            f.write("x4102c0s0b0n0\nx4102c0s1b0n0\n")
        pbs = dict(base, PBS_JOBID="8817.aurora-pbs-0001", PBS_NODEFILE=nodefile, EZPZ_MACHINE="aurora")
        p, err = plan(pbs)
        check("launch --dry-run under PBS: mpiexec --np=24 --ppn=12 on Aurora",
              p is not None and p["argv"][:5] == ["mpiexec", "--envall", "--line-buffer", "--np=24", "--ppn=12"],
              err or p)

        src = os.path.join(tmp, "venv")
        subprocess.run(["python3", "-m", "venv", "--without-pip", src], check=True)
        os.makedirs(os.path.join(src, "lib", "pkg"))
        with open(os.path.join(src, "bin", "tool"), "w") as f:
            f.write(f"#!{src}/bin/python3\nprint('hi')\n")
        os.chmod(os.path.join(src, "bin", "tool"), 0o755)
        for i in range(200):
            with open(os.path.join(src, "lib", "pkg", f"m{i}.py"), "wb") as f:
                f.write(os.urandom(4096 * (i % 7 + 1)))
        dst = os.path.join(tmp, "dst")
        proc = ezpz(["yeet", src, "--dst", dst], base)
        check("yeet to a local destination", proc.returncode == 0, proc.stderr)
        cmp = filecmp.dircmp(os.path.join(src, "lib"), os.path.join(dst, "lib"))
        check("yeet: the files byte for byte", proc.returncode == 0 and not cmp.diff_files and not cmp.left_only,
              f"differ {cmp.diff_files}, missing {cmp.left_only}")
        with open(os.path.join(dst, "bin", "tool")) as f:
            first = f.readline().strip()
        check("yeet: the venv's script points at its new place", first == f"#!{dst}/bin/python3", first)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failed:
        print(f"cross-smoke: {len(failed)} failed: {', '.join(failed)}")
        sys.exit(1)
    print("cross-smoke: all passed")


if __name__ == "__main__":
    main()
