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
. scripts/recent-sources.sh
gate_sources check-includes "$@"
command -v iwyu_tool >/dev/null || { echo "check-includes: iwyu_tool not found (Debian: iwyu)" >&2; exit 2; }
files=("${sources[@]}")
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
