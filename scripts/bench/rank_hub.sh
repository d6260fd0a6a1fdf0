#!/usr/bin/env bash
# The launch's rank hub at many ranks: N ranks under Open MPI's mpirun on this machine, each
# printing LINES lines, run by mpirun alone (the anchor) and through `ezpz launch`, one after the
# other for each N. Says each one's wall time, the lines that arrived, and how many ranks could
# not reach the hub within their 10 s (their lines then come through the launcher: with
# EZPZ_LOG_LEVEL=info each such shim says so). On a 2-core machine 1,024 ranks is 500 shims a
# core, all calling the hub at once: a hub that waits on one caller at a time answers late.
# Usage: scripts/bench/rank_hub.sh [path/to/ezpz]...   (RANKS="256 1024" LINES=200)
set -euo pipefail
cd "$(dirname "$0")/../.."
ezpzs=()
for e in "${@:-build/release/ezpz}"; do ezpzs+=("$(readlink -f "$e")"); done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export EZPZ_HOME="$tmp/home" PMIX_MCA_psec=${PMIX_MCA_psec:-native}  # (bench/launch.sh says why)
root_flags=""; [ "$(id -u)" = 0 ] && root_flags="--allow-run-as-root"
cat > "$tmp/spew.sh" <<EOF
#!/bin/sh
i=0
while [ \$i -lt ${LINES:-200} ]; do
  echo "line \$i of a rank, about as long as a log line is: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
  i=\$((i+1))
done
EOF
chmod +x "$tmp/spew.sh"
seconds() { python3 -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.2f}")' "$@"; }
printf '%6s  %-58s %8s %9s %s\n' ranks command wall_s lines "ranks that missed the hub"
for n in ${RANKS:-256 1024}; do
  t0=$(date +%s.%N)
  mpirun -np "$n" $root_flags --oversubscribe "$tmp/spew.sh" > "$tmp/out"
  printf '%6s  %-58s %8s %9s %s\n' "$n" "mpirun -np $n" "$(seconds "$t0" "$(date +%s.%N)")" \
    "$(wc -l < "$tmp/out")" "-"
  for ezpz in "${ezpzs[@]}"; do
    t0=$(date +%s.%N)
    EZPZ_LOG_LEVEL=info "$ezpz" launch --launcher mpirun -n "$n" -- "$tmp/spew.sh" > "$tmp/out" 2> "$tmp/err"
    t1=$(date +%s.%N)
    missed=$(grep -c "cannot reach the launch's rank hub" "$tmp/err" || true)
    label=$ezpz; [ ${#label} -gt 40 ] && label="...${label: -37}"
    printf '%6s  %-58s %8s %9s %s\n' "$n" "$label launch -n $n" "$(seconds "$t0" "$t1")" \
      "$(wc -l < "$tmp/out")" "$missed"
  done
done
