#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: install deps, build, ctest.
# Builds the dev preset (Debug, -Werror, _GLIBCXX_ASSERTIONS), the release preset (the fully
# static binary users get) and the asan preset (AddressSanitizer + UndefinedBehaviorSanitizer,
# without the libtorch companion, which is not instrumented) and runs every test against each.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
for preset in dev release asan; do
  echo "== $preset =="
  cmake --preset "$preset"
  cmake --build --preset "$preset"
  ctest --preset "$preset"
done
