#!/usr/bin/env python3
"""Unit test names ctest can run: no ';' in a Catch2 TEST_CASE name (ctest's test list splits at
it, and the halves match no test). Usage: check-test-names.py DIR..."""
import os
import re
import sys

bad = []
for root in sys.argv[1:]:
    for d, _, files in os.walk(root):
        for name in files:
            if name.endswith((".cpp", ".hpp")):
                path = os.path.join(d, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = re.search(r'TEST_CASE\("((?:[^"\\]|\\.)*)"', line)
                        if m and ";" in m.group(1):
                            bad.append(f"{path}:{n}: a ';' in the test name: {m.group(1)}")
print("\n".join(bad) if bad else "test names: none holds a ';'")
sys.exit(1 if bad else 0)
