#!/usr/bin/env bash
# The rank hub with many quiet ranks: what the head's one thread spends serving N connected ranks
# that only say they are alive (every 2 s each, as a quiet shim does), and how fast one rank's
# lines pass while N others are connected. Both ends of every connection live in one process
# (scripts/bench/hub_idle.cpp, built here as ezpz_bench_hub), so N is bounded by half the
# descriptor limit (ulimit -Hn).
# Usage: scripts/bench/hub_idle.sh [BUILD_DIR]   (default: build/release, configured if needed)
# RANKS="1000 4000 9000" SECONDS_EACH=10 LINES=200000 change the sizes. Anchor: the same hub with
# 100 ranks; what a heartbeat costs should not grow with N.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/release}
[ -f "$build/CMakeCache.txt" ] || cmake --preset release >/dev/null
cmake --build "$build" --target ezpz_bench_hub >/dev/null
bench="$build/ezpz_bench_hub"
limit=$(ulimit -Hn)
show='
import json, sys
r = json.loads(sys.stdin.read())
if sys.argv[1] == "alive":
    each = 1e6 * r["cpu_s"] / (r["alive_per_s"] * r["seconds"])
    print("  %6d ranks  %6.0f heartbeats/s  cpu %6.3f s  %5.1f%% of a core  %6.1f us each"
          % (r["ranks"], r["alive_per_s"], r["cpu_s"], 100 * r["core_busy"], each))
else:
    print("  %6d others  %8.0f lines/s  cpu %6.3f s for %d lines" % (r["idle"], r["lines_per_s"], r["cpu_s"], r["lines"]))
'
echo "ranks alive (the head's thread: CPU seconds, share of one core, microseconds a heartbeat):"
for n in 100 ${RANKS:-1000 4000 9000}; do
  if [ $((2 * n + 64)) -gt "$limit" ]; then
    echo "  $n ranks: over the descriptor limit ($limit): skipped"
    continue
  fi
  "$bench" alive "$n" "${SECONDS_EACH:-10}" 2>&1 >/dev/null | python3 -c "$show" alive
done
echo "one rank's lines (100 bytes each) with others connected:"
for n in 100 ${RANKS:-1000 4000 9000}; do
  [ $((2 * n + 64)) -gt "$limit" ] && continue
  "$bench" lines "$n" "${LINES:-200000}" 2>&1 >/dev/null | python3 -c "$show" lines
done
