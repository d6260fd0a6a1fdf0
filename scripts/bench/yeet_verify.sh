#!/usr/bin/env bash
# What verifying a tarball source costs (issue #17): `ezpz yeet ARCHIVE` of the 1 GB bench tree
# as .tar.zst and .tar.gz, NEW against OLD (the anchor) in one run, in rounds (each case once a round, after a sync), best of RUNS.
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

once() {  # once EZPZ ARCHIVE: wall seconds of one yeet into /dev/shm (tmpfs, as many compute nodes' /tmp: no disk noise), after a sync
  local s e
  rm -rf /dev/shm/ezpz-bench-verify-dst; sync  # no writeback of the last run's files in this one
  s=$(date +%s.%N); "$1" yeet "$2" --dst /dev/shm/ezpz-bench-verify-dst >/dev/null 2>&1; e=$(date +%s.%N)
  echo "$e - $s" | bc
}
labels=("old: old.tar.zst (anchor)" "new: old.tar.zst (no checksum to verify)"
        "new: new.tar.zst (frame checksums + .sha256)" "old: env.tar.gz (anchor)"
        "new: env.tar.gz (CRC-32 verified)" "new: sum.tar.gz (CRC-32 + .sha256)")
runs=("$old $out/old.tar.zst" "$new $out/old.tar.zst" "$new $out/new.tar.zst"
      "$old $out/env.tar.gz" "$new $out/env.tar.gz" "$new $out/sum.tar.gz")
cat "$out"/*.tar.* > /dev/null
once "$old" "$out/old.tar.zst" > /dev/null  # warm-up: the first extraction on a fresh disk is faster
declare -a bestof
for _ in $(seq "$RUNS"); do  # rounds: every case once per round, so all see the same machine
  for i in "${!runs[@]}"; do
    # shellcheck disable=SC2086
    d=$(once ${runs[$i]})
    bestof[$i]=$(echo "if (${bestof[$i]:-999999} < $d) ${bestof[$i]:-999999} else $d" | bc)
  done
done
rm -rf /dev/shm/ezpz-bench-verify-dst
echo "-- ezpz yeet ARCHIVE (best of $RUNS rounds)"
for i in "${!runs[@]}"; do printf '  %-52s %7.2f s\n' "${labels[$i]}" "${bestof[$i]}"; done
a=${bestof[0]}; b=${bestof[1]}; c=${bestof[2]}; d=${bestof[3]}; e=${bestof[4]}; f=${bestof[5]}
pct() { echo "scale=1; ($1 - $2) * 100 / $2" | bc; }
echo "-- cost of verifying (target: under 5%)"
echo "  zstd: $(pct "$b" "$a")% with nothing to check, $(pct "$c" "$a")% with checksums and .sha256"
echo "  gzip: $(pct "$e" "$d")% with the CRC-32, $(pct "$f" "$d")% with the CRC-32 and .sha256"
rm -rf "$out"
