#!/usr/bin/env bash
# The fully static linux-aarch64 ezpz (GH200 login nodes), cross-built on a Debian 12 x86_64
# machine from Debian's arm64 packages, then checked under qemu-user-static: `file` says static
# ARM aarch64, the unit tests pass, and a smoke test (--version, launch --dry-run under a Slurm
# and a PBS allocation, yeet of a small venv-like tree to a local destination) gives the
# x86_64 build's answers. With --release OUTDIR, scripts/release.sh packages it beside the
# x86_64 tarball (SHA256SUMS then lists both).
# Not in CI (scripts/test.sh): the cross build (the release preset and its unit tests, ~30 min on
# 2 cores; the emulated unit tests then take ~1 min) would put CI over the 75 min it may take
# for this; run it before a release.
# Usage: scripts/cross-aarch64.sh [--build DIR] [--release OUTDIR [--sign KEY]]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "cross-aarch64.sh: $*" >&2; exit 1; }
build=$src/build/aarch64 out='' sign=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=${2:?--build needs a directory}; shift ;;
    --release) out=${2:?--release needs an OUTDIR}; shift ;;
    --sign) sign=(--sign "${2:?--sign needs a key}"); shift ;;
    *) die "unknown argument $1 (usage: cross-aarch64.sh [--build DIR] [--release OUTDIR [--sign KEY]])" ;;
  esac
  shift
done
qemu="qemu-aarch64-static"

# 1. The cross toolchain, the arm64 libraries, qemu (idempotent).
"$src/scripts/install-deps.sh"
"$src/scripts/install-deps.sh" --aarch64

# 2. The release build for aarch64 (static, -O3, -Werror), unit tests included.
key=()
if [ ${#sign[@]} -gt 0 ]; then
  key=(-DEZPZ_RELEASE_PUBLIC_KEY="$(openssl pkey -in "${sign[1]}" -pubout -outform DER | tail -c 32 | od -An -tx1 | tr -d ' \n')")
fi
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$src/cmake/aarch64-linux-gnu.cmake" \
  -DCMAKE_BUILD_TYPE=Release -DEZPZ_STATIC=ON -DEZPZ_WERROR=ON -DEZPZ_TORCH=OFF "${key[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)"
bin=$build/ezpz

# 3. What it is.
what=$(file -b "$bin")
echo "cross-aarch64.sh: $what"
grep -q "ARM aarch64" <<<"$what" || die "$bin is not an aarch64 binary: $what"
grep -q "statically linked" <<<"$what" || die "$bin is not statically linked: $what"

# 4. Its unit tests, emulated (the shells and tools they start are this machine's own).
"$qemu" "$build/tests/ezpz_tests" --order lex

# 5. A smoke test: the same answers as an x86_64 ezpz would give.
EZPZ_AARCH64_BIN=$bin EZPZ_QEMU=$qemu python3 "$src/scripts/cross-smoke.py"

# 6. The release tarball, when asked.
if [ -n "$out" ]; then
  "$src/scripts/release.sh" "$out" --build "$build" "${sign[@]}"
fi
echo "cross-aarch64.sh: $bin passed"
