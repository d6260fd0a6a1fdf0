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
scripts/bench/make_tree.sh "$B" "$SMALL" "$BIG" "$BIG_MB"
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
