#!/usr/bin/env python3
"""Fail when a string literal in src/ says "node(s)", "process(es)" and the like: ezpz spells
plurals out (core::count_of: "1 node", "2 nodes"). Usage: check-plurals.py DIR..."""
import pathlib
import re
import sys

LITERAL = re.compile(r'"(?:\\.|[^"\\])*"')
HEDGED = re.compile(r"[A-Za-z]\((s|es)\)")
found = 0
for root in sys.argv[1:]:
    for path in sorted(pathlib.Path(root).rglob("*")):
        if path.suffix not in (".cpp", ".hpp", ".in"):
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if line.lstrip().startswith("//"):
                continue
            for lit in LITERAL.findall(line):
                if HEDGED.search(lit):
                    print(f"{path}:{n}: {lit}: spell the plural out (core::count_of)")
                    found += 1
sys.exit(1 if found else 0)
