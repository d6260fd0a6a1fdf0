#!/usr/bin/env bash
# yeet and tar-env on one node against tar, cp and ezpz's gzip path, on a generated tree of
# 20,000 small files plus a few 100 MB files (about 1 GB; set SMALL/BIG/BIG_MB to change).
# The tree lives in $BENCH_DIR (default /var/tmp/ezpz-bench-yeet), destinations in /tmp.
# Usage: scripts/bench/yeet.sh [path/to/ezpz]   (default: build/release/ezpz)
set -euo pipefail
cd "$(dirname "$0")/../.."
ezpz=$(readlink -f "${1:-build/release/ezpz}")
B=${BENCH_DIR:-/var/tmp/ezpz-bench-yeet}
SMALL=${SMALL:-20000}; BIG=${BIG:-7}; BIG_MB=${BIG_MB:-100}
src="$B/env"
out=/tmp/ezpz-bench-out
command -v zstd >/dev/null || { echo "zstd CLI missing: run scripts/install-deps.sh" >&2; exit 1; }
if [ ! -f "$B/.complete-$SMALL-$BIG-$BIG_MB" ]; then
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
fi
size=$(du -sb "$src" | cut -f1)
echo "tree: $(find "$src" -type f | wc -l) files, $((size / 1000000)) MB, $(nproc) cores"
sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true

t() {  # t LABEL CMD...: wall seconds of one run, caches warm (the tree was just read)
  local s e
  s=$(date +%s.%N); "${@:2}" >/dev/null 2>&1; e=$(date +%s.%N)
  printf '%-44s %7.2f s\n' "$1" "$(echo "$e - $s" | bc)"
  echo "$e - $s" | bc > "$B/last"
}
cat "$src"/lib*.so > /dev/null  # warm the page cache once for every run alike
rm -rf "$out"; mkdir -p "$out"
echo "-- pack (archive of the whole tree)"
t "tar -czf (ezpz's gzip path)"        tar -czf "$out/gz.tar.gz" -C "$B" env;             gz_pack=$(cat "$B/last")
t "tar --zstd -cf (zstd, 1 thread)"    tar --zstd -cf "$out/z.tar.zst" -C "$B" env
t "tar -I 'zstd -T0' -cf"              tar -I "zstd -T0" -cf "$out/zt.tar.zst" -C "$B" env
t "ezpz tar-env (zstd, all cores)"     "$ezpz" tar-env "$src" -o "$out/env.tar.zst" --rebuild; ez_pack=$(cat "$B/last")
ls -l "$out"/*.tar.* | awk '{printf "  %-40s %6.0f MB\n", $9, $5 / 1e6}'
echo "-- extract"
mkdir -p "$out/x1" "$out/x2"
t "tar -xzf (ezpz's gzip path)"        tar -xzf "$out/gz.tar.gz" -C "$out/x1" --strip-components=1; gz_x=$(cat "$B/last")
t "ezpz yeet env.tar.zst"              "$ezpz" yeet "$out/env.tar.zst" --dst "$out/x2";          ez_x=$(cat "$B/last")
echo "-- copy the tree to /tmp end to end"
t "cp -a"                              cp -a "$src" "$out/cp"
t "ezpz yeet --copy"                   "$ezpz" yeet "$src" --dst "$out/copy" --copy
t "ezpz yeet --compress"               "$ezpz" yeet "$src" --dst "$out/compress" --compress
t "ezpz yeet (incremental, nothing changed)" "$ezpz" yeet "$src" --dst "$out/copy"
echo "pack+extract: ezpz $(echo "$ez_pack + $ez_x" | bc) s vs gzip path $(echo "$gz_pack + $gz_x" | bc) s:" \
     "$(echo "scale=1; ($gz_pack + $gz_x) / ($ez_pack + $ez_x)" | bc)x faster"
rm -rf "$out"
