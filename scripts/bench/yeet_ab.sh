#!/usr/bin/env bash
# yeet and tar-env on this node, NEW against OLD (the anchor) in one run: the 1 GB bench tree
# (yeet.sh's) packed with tar-env, a .tar.zst yeeted, the tree yeeted with --copy, --compress and
# again with nothing changed (sync), each into /dev/shm after a sync, in rounds (every case once a
# round, so both binaries see the same machine), best of RUNS. For a change that must not move
# the numbers (issue #18's refactor): the two columns should match within noise.
# Usage: scripts/bench/yeet_ab.sh NEW_EZPZ OLD_EZPZ   (RUNS=3; BENCH_DIR as yeet.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
new=$(readlink -f "$1"); old=$(readlink -f "$2")
B=${BENCH_DIR:-/var/tmp/ezpz-bench-yeet}
RUNS=${RUNS:-3}
scripts/bench/make_tree.sh "$B" "${SMALL:-20000}" "${BIG:-7}" "${BIG_MB:-100}"
src="$B/env"
out=/var/tmp/ezpz-bench-ab
shm=/dev/shm/ezpz-bench-ab
rm -rf "$out" "$shm"; mkdir -p "$out"
size=$(du -sb "$src" | cut -f1)
echo "tree: $(find "$src" -type f | wc -l) files, $((size / 1000000)) MB, $(nproc) cores"
"$new" tar-env "$src" -o "$out/env.tar.zst" --rebuild >/dev/null

timed() {  # timed CMD...: wall seconds of one run (output dropped)
  local s e
  sync
  s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N)
  echo "$e - $s" | bc
}
case_run() {  # case_run N EZPZ: one run of case N with that binary
  local ez=$2
  case $1 in
    0) timed "$ez" tar-env "$src" -o "$out/t.tar.zst" --rebuild ;;
    1) rm -rf "$shm"; timed "$ez" yeet "$out/env.tar.zst" --dst "$shm" ;;
    2) rm -rf "$shm"; timed "$ez" yeet "$src" --dst "$shm" --copy ;;
    3) rm -rf "$shm"; timed "$ez" yeet "$src" --dst "$shm" --compress ;;
    4) rm -rf "$shm"; "$ez" yeet "$src" --dst "$shm" --copy >/dev/null 2>&1; timed "$ez" yeet "$src" --dst "$shm" ;;
  esac
}
labels=("tar-env (zstd, all cores)" "yeet env.tar.zst" "yeet DIR --copy" "yeet DIR --compress"
        "yeet DIR again, nothing changed (sync)")
cat "$src"/lib*.so > /dev/null
case_run 2 "$old" > /dev/null  # warm-up
declare -a best_old best_new
for _ in $(seq "$RUNS"); do
  for i in "${!labels[@]}"; do
    d=$(case_run "$i" "$old"); best_old[$i]=$(echo "if (${best_old[$i]:-999999} < $d) ${best_old[$i]:-999999} else $d" | bc)
    d=$(case_run "$i" "$new"); best_new[$i]=$(echo "if (${best_new[$i]:-999999} < $d) ${best_new[$i]:-999999} else $d" | bc)
  done
done
rm -rf "$out" "$shm"
printf '%-44s %9s %9s %8s\n' "-- best of $RUNS rounds" "old (s)" "new (s)" "new/old"
for i in "${!labels[@]}"; do
  printf '  %-42s %9.2f %9.2f %8.2f\n' "${labels[$i]}" "${best_old[$i]}" "${best_new[$i]}" \
    "$(echo "scale=3; ${best_new[$i]} / ${best_old[$i]}" | bc)"
done
