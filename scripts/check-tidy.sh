#!/usr/bin/env bash
# clang-tidy with the repository's .clang-tidy over src/cli, src/core and src/sys (or the files
# given), using a build's compile_commands.json (EZPZ_TIDY_BUILD, default build/dev). About 10 min
# on 2 cores for all of src/: CI (scripts/test.sh) runs it on the sources the last
# EZPZ_TIDY_COMMITS commits touched (--recent), a few minutes; run it whole where a change touches
# many files.
# Usage: scripts/check-tidy.sh [FILE...]   or   scripts/check-tidy.sh --recent N
set -euo pipefail
cd "$(dirname "$0")/.."
build=${EZPZ_TIDY_BUILD:-build/dev}
[ -f "$build/compile_commands.json" ] || { echo "check-tidy: configure the dev preset first (cmake --preset dev)" >&2; exit 2; }
if [ "${1:-}" = --recent ]; then
  n=${2:?--recent N}
  base=$(git rev-list --max-count=1 --skip="$n" HEAD 2>/dev/null || true)
  [ -n "$base" ] || base=$(git rev-list --max-parents=0 HEAD | tail -1)
  # Newest first, at most EZPZ_TIDY_MAX_FILES (30) of them: CI's time stays bounded whatever a
  # commit touched (run it on all of src/ after a change to many files).
  mapfile -t recent < <(git log --format= --name-only --diff-filter=AMR "$base..HEAD" -- 'src/cli/*.cpp' \
    'src/core/*.cpp' 'src/sys/*.cpp' | awk 'NF && !seen[$0]++' | while read -r f; do [ -f "$f" ] && echo "$f"; done |
    head -n "${EZPZ_TIDY_MAX_FILES:-30}")
  if [ ${#recent[@]} -eq 0 ]; then
    echo "check-tidy: no source of src/cli, src/core or src/sys changed in the last $n commits"
    exit 0
  fi
  echo "check-tidy: ${#recent[@]} sources the last $n commits touched (newest first, at most ${EZPZ_TIDY_MAX_FILES:-30})"
  set -- "${recent[@]}"
fi
command -v run-clang-tidy >/dev/null || { echo "check-tidy: run-clang-tidy not found (Debian: clang-tidy)" >&2; exit 2; }
files=("$@")
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
