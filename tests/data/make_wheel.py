"""Build tinypkg-1.0-py3-none-any.whl from tests/data/tinypkg into DIR (no network, no build tools).

Usage: python3 make_wheel.py DIR [NAME [VERSION]]   -> prints the wheel's path
Another NAME gets a generated module of the same shape; another VERSION adds `VERSION = "..."`.
"""
import base64
import hashlib
import os
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
NAME, VERSION = "tinypkg", "1.0"


def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def main(out_dir, name=NAME, version=VERSION):
    DIST = f"{name}-{version}.dist-info"
    if name == NAME:
        source = open(os.path.join(HERE, NAME, "__init__.py"), "rb").read()
    else:
        source = f'import sys\n\n\ndef hello():\n    print(f"{name} hello from {{sys.prefix}}")\n'.encode()
    if version != VERSION:
        source += f'\nVERSION = "{version}"\n'.encode()
    files = {
        f"{name}/__init__.py": source,
        f"{DIST}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{DIST}/WHEEL": b"Wheel-Version: 1.0\nGenerator: ezpz-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{DIST}/entry_points.txt": f"[console_scripts]\n{name}-hello = {name}:hello\n".encode(),
    }
    record = "".join(f"{p},{digest(d)},{len(d)}\n" for p, d in files.items()) + f"{DIST}/RECORD,,\n"
    files[f"{DIST}/RECORD"] = record.encode()
    path = os.path.join(out_dir, f"{name}-{version}-py3-none-any.whl")
    with zipfile.ZipFile(path, "w") as z:
        for p, d in files.items():
            z.writestr(p, d)
    print(path)


if __name__ == "__main__":
    main(*sys.argv[1:4])
