#!/usr/bin/env python3
"""The core folders' layers (ARCHITECTURE.md): a file in one folder includes headers of its own
folder and of the folders below it, never above. A loop between two folders, or a yeet header in
the include closure of launch, job, reach or ports, fails (issue #57).

Usage: scripts/check-core-layers.py [SRC_DIR]   (default: src of this repository)
"""
import os
import re
import sys

# Lowest first. train and update stand alone (they need base only).
LAYERS = ["base", "ports", "job", "launch", "reach", "yeet", "doctor"]
ALONE = {"train": {"base"}, "update": {"base"}}
INCLUDE = re.compile(r'^#include "core/([a-z_]+)/[^"]+"', re.M)


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src")
    core = os.path.join(src, "core")
    bad = []
    folders = sorted(d for d in os.listdir(core) if os.path.isdir(os.path.join(core, d)))
    for folder in folders:
        if folder not in LAYERS and folder not in ALONE:
            bad.append(f"core/{folder}: not in the layers of scripts/check-core-layers.py (ARCHITECTURE.md)")
            continue
        allowed = ALONE.get(folder) or set(LAYERS[:LAYERS.index(folder) + 1])
        allowed = allowed | {folder}
        for root, _, files in os.walk(os.path.join(core, folder)):
            for name in sorted(files):
                path = os.path.join(root, name)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                for used in INCLUDE.findall(text):
                    if used not in allowed:
                        rel = os.path.relpath(path, src)
                        bad.append(f"{rel} includes core/{used}/: {folder} is below {used} "
                                   f"(layers, lowest first: {' < '.join(LAYERS)})")
    for line in bad:
        print(line)
    if bad:
        print(f"{len(bad)} include(s) against the core layers")
        return 1
    print(f"core layers: {' < '.join(LAYERS)}; {len(folders)} folders, no include upward")
    return 0


if __name__ == "__main__":
    sys.exit(main())
