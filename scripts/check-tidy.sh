#!/usr/bin/env bash
# clang-tidy with the repository's .clang-tidy over src/cli, src/core and src/sys (or the files
# given), using the dev build's compile_commands.json. About 10 min on 2 cores for all of src/,
# so not part of scripts/test.sh; run it before a change lands where it touches many files.
# Usage: scripts/check-tidy.sh [FILE...]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/dev/compile_commands.json ] || { echo "check-tidy: configure the dev preset first (cmake --preset dev)" >&2; exit 2; }
command -v run-clang-tidy >/dev/null || { echo "check-tidy: run-clang-tidy not found (Debian: clang-tidy)" >&2; exit 2; }
files=("$@")
[ ${#files[@]} -gt 0 ] || files=('src/(cli|core|sys)/')
# run-clang-tidy fails when it finds something: what it printed says what.
out=$( (run-clang-tidy -p build/dev -j "$(nproc)" -quiet -extra-arg=-Wno-unknown-warning-option "${files[@]}" 2>&1 || true) |
  sed 's/\x1b\[[0-9;]*m//g')
found=$(grep -E ': (warning|error): ' <<<"$out" | grep -v 'unknown warning option' || true)
if [ -n "$found" ]; then
  echo "$found"
  echo "check-tidy: $(wc -l <<<"$found") finding(s)" >&2
  exit 1
fi
echo "check-tidy: clean"
