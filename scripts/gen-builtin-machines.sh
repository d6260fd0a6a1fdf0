#!/usr/bin/env bash
# Writes src/core/job/builtin_profiles.cpp (the built-in machine profiles as data) from
# src/core/job/machines.toml, through the same parser user config files go through. Run it after
# editing machines.toml; the unit test [builtin_profiles] fails until then.
# Usage: scripts/gen-builtin-machines.sh [build dir with unit tests]   (default: build/dev)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/dev}
cmake --build "$build" -j2 --target ezpz_tests
out=src/core/job/builtin_profiles.cpp
EZPZ_WRITE_BUILTIN_PROFILES="$PWD/$out" "$build/tests/ezpz_tests" "[builtin_profiles]" >/dev/null || true
clang-format -i "$out"
cmake --build "$build" -j2 --target ezpz_tests
"$build/tests/ezpz_tests" "[builtin_profiles]"
echo "wrote $out"
