#!/usr/bin/env bash
# What verifying a tarball source costs (issue #17): `ezpz yeet ARCHIVE` of the 1 GB bench tree
# as .tar.zst and .tar.gz, NEW against OLD (the anchor) in one run, interleaved, best of RUNS.
# NEW verifies gzip's CRC-32, zstd's frame checksums and ARCHIVE.sha256 while extracting.
# Usage: scripts/bench/yeet_verify.sh NEW_EZPZ OLD_EZPZ   (RUNS=3; BENCH_DIR as yeet.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
new=$(readlink -f "$1"); old=$(readlink -f "$2")
B=${BENCH_DIR:-/var/tmp/ezpz-bench-yeet}
RUNS=${RUNS:-3}
scripts/bench/make_tree.sh "$B" "${SMALL:-20000}" "${BIG:-7}" "${BIG_MB:-100}"
out=/var/tmp/ezpz-bench-verify
rm -rf "$out"; mkdir -p "$out"
size=$(du -sb "$B/env" | cut -f1)
echo "tree: $(find "$B/env" -type f | wc -l) files, $((size / 1000000)) MB, $(nproc) cores"
# Archives: OLD's tar-env (zstd frames without a checksum, no .sha256), NEW's (checksums and
# .sha256), and tar -czf's (gzip: CRC-32), once more with a .sha256 beside it.
"$old" tar-env "$B/env" -o "$out/old.tar.zst" --rebuild >/dev/null
"$new" tar-env "$B/env" -o "$out/new.tar.zst" --rebuild >/dev/null
tar -czf "$out/env.tar.gz" -C "$B" env
cp "$out/env.tar.gz" "$out/sum.tar.gz"; (cd "$out" && sha256sum sum.tar.gz > sum.tar.gz.sha256)
ls -l "$out" | awk 'NR > 1 {printf "  %-24s %8.1f MB\n", $9, $5 / 1e6}'

best() {  # best LABEL EZPZ ARCHIVE: best wall seconds of RUNS yeets into /tmp (caches warm)
  local b=999999 s e d
  for _ in $(seq "$RUNS"); do
    rm -rf /tmp/ezpz-bench-verify-dst
    s=$(date +%s.%N); "$2" yeet "$3" --dst /tmp/ezpz-bench-verify-dst >/dev/null 2>&1; e=$(date +%s.%N)
    d=$(echo "$e - $s" | bc); b=$(echo "if ($d < $b) $d else $b" | bc)
  done
  rm -rf /tmp/ezpz-bench-verify-dst
  printf '  %-52s %7.2f s\n' "$1" "$b"
  echo "$b"  > "$out/last"
}
cat "$out"/*.tar.* > /dev/null
echo "-- ezpz yeet ARCHIVE (best of $RUNS)"
best "old: old.tar.zst (anchor)"                       "$old" "$out/old.tar.zst"; a=$(cat "$out/last")
best "new: old.tar.zst (no checksum to verify)"         "$new" "$out/old.tar.zst"; b=$(cat "$out/last")
best "new: new.tar.zst (frame checksums + .sha256)"     "$new" "$out/new.tar.zst"; c=$(cat "$out/last")
best "old: env.tar.gz (anchor)"                        "$old" "$out/env.tar.gz";  d=$(cat "$out/last")
best "new: env.tar.gz (CRC-32 verified)"                "$new" "$out/env.tar.gz";  e=$(cat "$out/last")
best "new: sum.tar.gz (CRC-32 + .sha256)"               "$new" "$out/sum.tar.gz";  f=$(cat "$out/last")
pct() { echo "scale=1; ($1 - $2) * 100 / $2" | bc; }
echo "-- cost of verifying (target: under 5%)"
echo "  zstd: $(pct "$b" "$a")% with nothing to check, $(pct "$c" "$a")% with checksums and .sha256"
echo "  gzip: $(pct "$e" "$d")% with the CRC-32, $(pct "$f" "$d")% with the CRC-32 and .sha256"
rm -rf "$out"
