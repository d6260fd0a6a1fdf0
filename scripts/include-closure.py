#!/usr/bin/env python3
"""How far a header reaches: for each HEADER given (a path under src/, e.g. core/yeet/relay_tree.hpp),
how many translation units of src/ (less src/torch) include it, directly or through others; then
how many include any yeet header, and how many of core/launch, job, ports and reach do (issue #57:
none). Usage: scripts/include-closure.py [HEADER...]"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
INCLUDE = re.compile(r'#include "([^"]+)"')
_cache = {}


def closure(path):
    if path in _cache:
        return _cache[path]
    _cache[path] = set()
    found = set()
    try:
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return found
    for h in INCLUDE.findall(text):
        if os.path.exists(os.path.join(ROOT, h)):
            found.add(h)
            found |= closure(h)
    _cache[path] = found
    return found


def main():
    units = sorted(os.path.relpath(os.path.join(d, f), ROOT) for d, _, fs in os.walk(ROOT) for f in fs
                   if f.endswith(".cpp"))
    units = [u for u in units if not u.startswith("torch/")]
    for header in sys.argv[1:]:
        n = sum(1 for u in units if header in closure(u))
        print(f"{header}: in {n} of {len(units)} translation units")
    yeet = [u for u in units if any(h.startswith("core/yeet/") for h in closure(u))]
    print(f"any core/yeet header: in {len(yeet)} of {len(units)}")
    for folder in ("core/launch/", "core/job/", "core/ports/", "core/reach/"):
        n = sum(1 for u in yeet if u.startswith(folder))
        print(f"  {folder} units with a yeet header: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
