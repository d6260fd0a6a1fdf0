#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] [TARGET...]: build the libFuzzer targets (cmake --preset fuzz, clang,
# ASan + UBSan) and run each for SECONDS (default 600), then print libFuzzer's final stats:
# executions, executions per second, coverage (cov: edges, ft: features), corpus size, peak RSS.
# Seeds come from tests/fuzz/corpus/<target>; the growing corpus stays in build/fuzz/corpus/<target>
# and crashes are written to build/fuzz/artifacts/<target>/. Exit 1 when any target finds one.
# EZPZ_FUZZ_PARALLEL=N runs N targets at a time (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
all=(hostlist machine_toml cli_args relay_wire archive)
targets=("${@:-${all[@]}}")
[ "$#" -gt 0 ] || targets=("${all[@]}")
parallel=${EZPZ_FUZZ_PARALLEL:-1}
B=build/fuzz

command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ is missing: run scripts/install-deps.sh" >&2; exit 1; }
[ -f "$B/build.ninja" ] || cmake --preset fuzz >/dev/null
cmake --build "$B" -j2 --target "${targets[@]/#/fuzz_}"

run_one() {
  local t=$1 log="$B/logs/$1.log"
  mkdir -p "$B/corpus/$t" "$B/artifacts/$t" "$B/logs" "$B/work/$t"
  # Each target runs in its own directory: the archive target extracts below $TMPDIR.
  (cd "$B/work/$t" && TMPDIR="$PWD" "../../tests/fuzz/fuzz_$t" -max_total_time="$seconds" -print_final_stats=1 \
    -timeout=30 -rss_limit_mb=2048 -artifact_prefix="../../artifacts/$t/" "../../corpus/$t" \
    "../../../../tests/fuzz/corpus/$t") > "$log" 2>&1
}

pids=()
status=0
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=("$!")
  if [ "${#pids[@]}" -ge "$parallel" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done

printf '\n%-14s %8s %12s %10s %8s %8s %8s %s\n' target seconds execs exec/s cov ft corpus result
for t in "${targets[@]}"; do
  log="$B/logs/$t.log"
  stat() { { grep -m1 "^stat::$1:" "$log" || true; } | awk '{print $2}'; }
  done_line=$({ grep -E '^#[0-9]+[[:space:]]+(DONE|NEW|REDUCE|pulse)' "$log" || true; } | tail -1)
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<< "$done_line")
  ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<< "$done_line")
  corp=$(sed -nE 's/.* corp: ([0-9]+\/[^ ]+).*/\1/p' <<< "$done_line")
  result=ok
  if grep -qE 'ERROR: (libFuzzer|AddressSanitizer|UndefinedBehaviorSanitizer)|runtime error:|fuzz property failed' "$log"; then
    result="FOUND: see $log and $B/artifacts/$t/"
  fi
  printf '%-14s %8s %12s %10s %8s %8s %8s %s\n' "$t" "$seconds" "$(stat number_of_executed_units)" \
    "$(stat average_exec_per_sec)" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result"
  echo "    $done_line"
done
exit "$status"
