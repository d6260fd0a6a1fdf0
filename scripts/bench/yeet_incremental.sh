#!/usr/bin/env bash
# Incremental yeet on simulated nodes: a full broadcast of a ~1 GB tree (a venv with Debian's
# dist-packages plus data files), then about 1% of it changes (a new package, a removed one,
# small edits inside large files) and yeet runs again. Prints bytes streamed and wall time of
# both, and their ratios (targets: bytes <= 3%, time <= 20% of the full broadcast).
# Usage: scripts/bench/yeet_incremental.sh [path/to/ezpz]   (NODES=8)
set -euo pipefail
cd "$(dirname "$0")/../.."
ezpz_src=$(readlink -f "${1:-build/release/ezpz}")
N=${NODES:-8}
export EZSIM_DIR=/var/tmp/ezpz-bench-incr EZSIM_PREFIX=ezbinc EZSIM_NET=10.250.32 EZSIM_TMP_SIZE=3g
sim=scripts/cluster-sim
P=/var/tmp/ezpz-bench-incr-payload
if [ ! -f "$P/.complete" ]; then
  rm -rf "$P"; mkdir -p "$P"
  /usr/bin/python3 -m venv "$P/venv"
  cp -a /usr/lib/python3/dist-packages/. "$P/venv/lib/python3.11/site-packages/"
  mkdir -p "$P/venv/share/data"
  for i in $(seq 1 40); do head -c 10000000 /dev/urandom > "$P/venv/share/data/weights$i.bin"; done
  for i in $(seq 1 40); do head -c 7500000 /dev/urandom | base64 > "$P/venv/share/data/table$i.txt"; done
  touch "$P/.complete"
fi
"$sim/down.sh" >/dev/null 2>&1 || true
trap '"$sim/down.sh" >/dev/null 2>&1' EXIT
"$sim/up.sh" "$N" >/dev/null
mkdir -p "$EZSIM_DIR/bin"; cp "$ezpz_src" "$EZSIM_DIR/bin/ezpz"
ezpz="$EZSIM_DIR/bin/ezpz"
# A working copy of the payload that this run may change.
W=/var/tmp/ezpz-bench-incr-work; rm -rf "$W"; cp -a "$P/venv" "$W"
echo "payload: $(find "$W" -type f | wc -l) files, $(du -sm "$W" | cut -f1) MB; $N nodes on $(nproc) cores"
yeet() {  # yeet LABEL: prints seconds and stream bytes
  local s e; s=$(date +%s.%N)
  "$sim/exec.sh" -n node1 env EZPZ_MACHINE=local "$ezpz" yeet "$W" --dst /tmp/bench-incr --hostfile "$EZSIM_DIR/hostfile" \
    --json > /tmp/ezpz-bench-incr.json 2>/dev/null || { echo "$1 failed"; cat /tmp/ezpz-bench-incr.json; exit 1; }
  e=$(date +%s.%N)
  python3 - "$1" "$(echo "$e - $s" | bc)" /tmp/ezpz-bench-incr.json <<'PY'
import json, sys
label, secs, path = sys.argv[1], float(sys.argv[2]), sys.argv[3]
r = json.load(open(path)); inc = r["incremental"]
extra = "" if inc["mode"] == "full" else f', {inc["files"]} whole ({inc["bytes"]/1e6:.1f} MB), {inc["deltas"]} deltas ({inc["delta_bytes"]/1e6:.2f} MB), {inc["removed"]} removed'
print(f"  {label:<34} {secs:7.2f} s  stream {r['stream']['bytes']/1e6:9.2f} MB  ({inc['mode']}{extra}); failed: {r['failed']}")
open("/tmp/ezpz-bench-incr-" + inc["mode"], "w").write(f"{secs} {r['stream']['bytes']}\n")
PY
}
yeet "full (first yeet)"
# About 1% of the tree changes: a new 4 MB package, a removed package, 4 KB rewritten in the
# middle of each of six 10 MB files.
site="$W/lib/python3.11/site-packages"
mkdir -p "$site/newpkg"; head -c 3000000 /dev/urandom | base64 > "$site/newpkg/data.py"
rm -rf "$site/$(ls "$site" | grep -v -e dist-info -e '^_' | head -1)"
for i in 1 2 3 4 5 6; do
  dd if=/dev/urandom of="$W/share/data/weights$i.bin" bs=4096 count=1 seek=1000 conv=notrunc status=none
done
changed=$(( 4000000 + 6 * 10000000 ))
echo "  changed: ~$((changed / 1000000)) MB of files touched (new package, removed package, 6 edited 10 MB files)"
yeet "incremental (after ~1% changed)"
read -r fs fb < /tmp/ezpz-bench-incr-full
read -r is ib < /tmp/ezpz-bench-incr-delta
python3 -c "print(f'  ratio: bytes {$ib/$fb*100:.2f}% of the full broadcast (target <= 3%), time {$is/$fs*100:.1f}% (target <= 20%)')"
rm -rf "$W" /tmp/ezpz-bench-incr*
