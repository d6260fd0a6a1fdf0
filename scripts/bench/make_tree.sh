#!/usr/bin/env bash
# The benchmark tree in DIR/env (once; kept): SMALL python-source-like files of 1-8 KB and BIG
# shared-library-like blobs of BIG_MB MB each. Usage: make_tree.sh DIR SMALL BIG BIG_MB
set -euo pipefail
B=$1; SMALL=$2; BIG=$3; BIG_MB=$4
src="$B/env"
[ -f "$B/.complete-$SMALL-$BIG-$BIG_MB" ] && exit 0
rm -rf "$B"; mkdir -p "$src"
python3 - "$src" "$SMALL" "$BIG" "$BIG_MB" <<'PY'
import os, random, sys
root, small, big, big_mb = sys.argv[1], *map(int, sys.argv[2:])
rnd = random.Random(42)
words = [bytes(rnd.choice(b"abcdefghijklmnopqrstuvwxyz_") for _ in range(rnd.randint(3, 12))) for _ in range(5000)]
for i in range(small):  # python-source-like text: compressible, 1-8 KB
    d = os.path.join(root, "lib", f"pkg{i % 200}", f"mod{i % 7}")
    os.makedirs(d, exist_ok=True)
    n = rnd.randint(1000, 8000)
    text = b" ".join(rnd.choice(words) for _ in range(n // 6))[:n]
    with open(os.path.join(d, f"f{i}.py"), "wb") as f:
        f.write(text)
for i in range(big):  # shared-library-like blobs: half random, half zeros and repeats
    with open(os.path.join(root, f"lib{i}.so"), "wb") as f:
        for _ in range(big_mb):
            f.write(os.urandom(512 << 10) + bytes(256 << 10) + (b"\x90\x48\x89\xe5" * (64 << 10)))
PY
touch "$B/.complete-$SMALL-$BIG-$BIG_MB"
