#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: install deps, build, ctest.
# Builds the dev preset (Debug, -Werror, _GLIBCXX_ASSERTIONS) and the release preset
# (the fully static binary users get) and runs every test against both.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
for preset in dev release; do
  echo "== $preset =="
  cmake --preset "$preset"
  cmake --build --preset "$preset"
  ctest --preset "$preset"
done
