"""Damaged and hostile tar archives for yeet's tests, made here rather than stored: flipped bits
and truncation under gzip, zstd (with and without frame checksums) and xz; FIFOs and devices;
setuid and 0777 modes; symlink chains that leave the tree only through other links; names past
PATH_MAX or a depth limit; members stored twice; control bytes in names; a zstd bomb.

    python3 hostile_archives.py OUTDIR   # writes one of each, for a look by hand
"""
import io
import os
import subprocess
import sys
import tarfile


def member(name, data=b"x", kind=tarfile.REGTYPE, target="", mode=0o644, devmajor=0, devminor=0):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    info.mode = mode
    info.devmajor, info.devminor = devmajor, devminor
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data if kind == tarfile.REGTYPE else None


def directory(name, mode=0o755):
    return member(name, kind=tarfile.DIRTYPE, mode=mode)


def symlink(name, target):
    return member(name, kind=tarfile.SYMTYPE, target=target, mode=0o777)


def hardlink(name, target):
    return member(name, kind=tarfile.LNKTYPE, target=target)


def tar_bytes(members, fmt=tarfile.PAX_FORMAT):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for info, data in members:
            t.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def compress(raw, kind, checksum=True):
    """raw tar bytes -> gz, zst (with or without the frame checksum) or xz bytes, with the tools."""
    if kind == "tar":
        return raw
    argv = {"gz": ["gzip", "-c", "-n"],
            "zst": ["zstd", "-q", "-c", "--check" if checksum else "--no-check"],
            "xz": ["xz", "-c"] + ([] if checksum else ["--check=none"])}[kind]
    return subprocess.run(argv, input=raw, capture_output=True, check=True).stdout


def venv_members(files=40, size=24 << 10, seed=7):
    """A small venv-shaped tree of incompressible files (bits flipped in it stay in data)."""
    import random
    rnd = random.Random(seed)
    out = [directory("env"), directory("env/bin"), directory("env/lib"),
           member("env/bin/activate", b'VIRTUAL_ENV="/old/env"\nexport VIRTUAL_ENV\n'),
           member("env/pyvenv.cfg", b"home = /usr/bin\n")]
    for i in range(files):
        out.append(member(f"env/lib/f{i:03d}.bin", rnd.randbytes(size)))
    return out


def flip_bit(data, where=0.5):
    b = bytearray(data)
    b[int(len(b) * where)] ^= 0x10
    return bytes(b)


def deep_name(depth, part="d"):
    return "env/" + "/".join([part] * depth) + "/f"


def bomb_zst(size):
    """A .tar.zst of one file of `size` zero bytes: tiny on disk, `size` when extracted."""
    header = tarfile.TarInfo("env/zeros")
    header.size = size
    head = header.tobuf(format=tarfile.PAX_FORMAT)
    pad = (512 - size % 512) % 512
    proc = subprocess.Popen(["zstd", "-q", "-c", "-19"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out = []
    import threading
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()))
    reader.start()
    proc.stdin.write(head)
    zeros = bytes(1 << 20)
    left = size
    while left > 0:
        n = min(left, len(zeros))
        proc.stdin.write(zeros[:n])
        left -= n
    proc.stdin.write(bytes(pad + 1024))
    proc.stdin.close()
    reader.join()
    proc.wait()
    return out[0]


if __name__ == "__main__":
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    raw = tar_bytes(venv_members())
    for kind in ("gz", "zst", "xz"):
        good = compress(raw, kind)
        with open(os.path.join(outdir, f"env.tar.{kind}"), "wb") as f:
            f.write(good)
        with open(os.path.join(outdir, f"flipped.tar.{kind}"), "wb") as f:
            f.write(flip_bit(good))
    samples = {
        "fifo.tar": [directory("env"), directory("env/bin"), member("env/bin/activate", kind=tarfile.FIFOTYPE)],
        "device.tar": [directory("env"), member("env/mem", kind=tarfile.CHRTYPE, mode=0o666, devmajor=1, devminor=1)],
        "chain.tar": [directory("env"), directory("env/a"), symlink("env/a/cur", "."), symlink("env/a/par", "cur/../..")],
        "deep.tar": [member(deep_name(3000))],
    }
    for name, members in samples.items():
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(tar_bytes(members))
