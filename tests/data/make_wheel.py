"""Build tinypkg-1.0-py3-none-any.whl from tests/data/tinypkg into DIR (no network, no build tools).

Usage: python3 make_wheel.py DIR   -> prints the wheel's path
"""
import base64
import hashlib
import os
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
NAME, VERSION = "tinypkg", "1.0"
DIST = f"{NAME}-{VERSION}.dist-info"


def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def main(out_dir):
    files = {
        f"{NAME}/__init__.py": open(os.path.join(HERE, NAME, "__init__.py"), "rb").read(),
        f"{DIST}/METADATA": f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n".encode(),
        f"{DIST}/WHEEL": b"Wheel-Version: 1.0\nGenerator: ezpz-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{DIST}/entry_points.txt": f"[console_scripts]\ntinypkg-hello = {NAME}:hello\n".encode(),
    }
    record = "".join(f"{p},{digest(d)},{len(d)}\n" for p, d in files.items()) + f"{DIST}/RECORD,,\n"
    files[f"{DIST}/RECORD"] = record.encode()
    path = os.path.join(out_dir, f"{NAME}-{VERSION}-py3-none-any.whl")
    with zipfile.ZipFile(path, "w") as z:
        for p, d in files.items():
            z.writestr(p, d)
    print(path)


if __name__ == "__main__":
    main(sys.argv[1])
