#!/usr/bin/env bash
# Include cleaner: include-what-you-use (Debian's iwyu) over src/cli, src/core and src/sys (or the
# files given), using a build's compile_commands.json (EZPZ_TIDY_BUILD, default build/dev). It fails
# on a project header a file includes and does not use (`#include "core/..."` iwyu would remove): each
# such include widens what an edit rebuilds and hides the real dependencies (core's layers,
# ARCHITECTURE.md). System headers are not judged: iwyu 8.18 (clang 14) maps libstdc++ 12 badly (it
# would swap <chrono> for <bits/chrono.h>). clang-tidy's misc-include-cleaner needs clang-tidy 17;
# Debian 12 has 14 to 16. All of src/ takes ~4 min on 2 cores: CI (scripts/test.sh) runs it on the
# sources the last EZPZ_TIDY_COMMITS commits touched (--recent), as check-tidy.sh.
# Usage: scripts/check-includes.sh [FILE...]   or   scripts/check-includes.sh --recent N
set -euo pipefail
cd "$(dirname "$0")/.."
build=${EZPZ_TIDY_BUILD:-build/dev}
[ -f "$build/compile_commands.json" ] || { echo "check-includes: configure the dev preset first (cmake --preset dev)" >&2; exit 2; }
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
    echo "check-includes: no source of src/cli, src/core or src/sys changed in the last $n commits"
    exit 0
  fi
  echo "check-includes: ${#recent[@]} sources the last $n commits touched (newest first, at most ${EZPZ_TIDY_MAX_FILES:-30})"
  set -- "${recent[@]}"
fi
command -v iwyu_tool >/dev/null || { echo "check-includes: iwyu_tool not found (Debian: iwyu)" >&2; exit 2; }
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  mapfile -t files < <(git ls-files 'src/cli/*.cpp' 'src/core/*.cpp' 'src/sys/*.cpp')
fi
maps=/usr/share/include-what-you-use
out=$(iwyu_tool -j "$(nproc)" -p "$build" "${files[@]}" -- -Wno-unknown-warning-option -Xiwyu --no_fwd_decls \
  -Xiwyu --mapping_file=$maps/gcc.stl.headers.imp -Xiwyu --mapping_file=$maps/gcc.libc.imp 2>&1 || true)
# "FILE should remove these lines:" then "- #include ..." lines until a blank line.
found=$(awk -v root="$PWD/" '
  / should remove these lines:$/ { file = $1; sub(root, "", file); removing = 1; next }
  removing && /^- #include "/ { line = $0; sub(/^- /, "", line); sub(/ +\/\/ lines.*/, "", line); print file ": unused " line; next }
  /^$/ { removing = 0 }' <<<"$out")
if ! grep -q "include-list\|has correct #includes" <<<"$out"; then
  echo "$out" | tail -20
  echo "check-includes: iwyu did not run (its output is above)" >&2
  exit 2
fi
if [ -n "$found" ]; then
  echo "$found"
  echo "check-includes: $(wc -l <<<"$found") unused project include(s): remove them (and include what is used instead)" >&2
  exit 1
fi
echo "check-includes: ${#files[@]} sources, no unused project include"
