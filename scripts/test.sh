#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: install deps, build, ctest.
# Builds the dev preset (Debug, -Werror, _GLIBCXX_ASSERTIONS), the release preset (the fully
# static binary users get) and the asan preset (AddressSanitizer + UndefinedBehaviorSanitizer,
# without the libtorch companion, which is not instrumented) and runs every test against each,
# except that the fault-injection test (cluster.yeet_faults, about 2 minutes of mostly waiting
# for faults to play out) runs against the dev build only, to keep the run short.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
for preset in dev release asan; do
  echo "== $preset =="
  cmake --preset "$preset"
  cmake --build --preset "$preset"
  case "$preset" in
    dev) ctest --preset "$preset" ;;
    release | asan) ctest --preset "$preset" -E '^cluster\.yeet_faults$' ;;
  esac
done
