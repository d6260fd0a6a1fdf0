#!/usr/bin/env bash
# clang-tidy with the repository's .clang-tidy over src/cli, src/core and src/sys (or the files
# given), using a build's compile_commands.json (EZPZ_TIDY_BUILD, default build/dev). About 10 min
# on 2 cores for all of src/: CI (scripts/test.sh) runs it on the sources the last
# EZPZ_TIDY_COMMITS commits touched (--recent), a few minutes; run it whole where a change touches
# many files.
# Usage: scripts/check-tidy.sh [FILE...]   or   scripts/check-tidy.sh --recent N
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/recent-sources.sh
gate_sources check-tidy "$@"
command -v run-clang-tidy >/dev/null || { echo "check-tidy: run-clang-tidy not found (Debian: clang-tidy)" >&2; exit 2; }
files=("${sources[@]}")
[ ${#files[@]} -gt 0 ] || files=('src/(cli|core|sys)/')
# run-clang-tidy fails when it finds something: what it printed says what.
out=$( (run-clang-tidy -p "$build" -j "$(nproc)" -quiet -extra-arg=-Wno-unknown-warning-option "${files[@]}" 2>&1 || true) |
  sed 's/\x1b\[[0-9;]*m//g')
found=$(grep -E ': (warning|error): ' <<<"$out" | grep -v 'unknown warning option' || true)
if [ -n "$found" ]; then
  echo "$found"
  echo "check-tidy: $(wc -l <<<"$found") finding(s)" >&2
  exit 1
fi
echo "check-tidy: clean"
