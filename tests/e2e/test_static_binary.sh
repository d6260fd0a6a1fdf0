#!/usr/bin/env bash
# The release binary is fully static, stripped and small.
set -u
fails=0
desc=$(file -L "$EZPZ_BIN")
grep -q "statically linked" <<<"$desc" || { echo "FAIL: not static: $desc"; fails=1; }
ldd_out=$(ldd "$EZPZ_BIN" 2>&1)
grep -q "not a dynamic executable" <<<"$ldd_out" || { echo "FAIL: ldd says: $ldd_out"; fails=1; }
size=$(stat -c %s "$EZPZ_BIN")
[ "$size" -lt $((8 * 1024 * 1024)) ] || { echo "FAIL: $size bytes is over 8 MiB"; fails=1; }
# It runs in an empty environment.
env -i "$EZPZ_BIN" --version | grep -q '^ezpz ' || { echo "FAIL: does not run with env -i"; fails=1; }
[ "$fails" -eq 0 ] || exit 1
echo "static binary: $size bytes: $desc"
