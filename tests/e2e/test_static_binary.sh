#!/usr/bin/env bash
# The release binary is fully static, stripped and small.
set -u
fails=0
desc=$(file -L "$EZPZ_BIN")
grep -q "statically linked" <<<"$desc" || { echo "FAIL: not static: $desc"; fails=1; }
ldd_out=$(ldd "$EZPZ_BIN" 2>&1)
grep -q "not a dynamic executable" <<<"$ldd_out" || { echo "FAIL: ldd says: $ldd_out"; fails=1; }
size=$(stat -c %s "$EZPZ_BIN")
# 8 MiB was the target before yeet's SSH (libssh + OpenSSL's libcrypto, ~4.5 MB) and librsync
# joined; 10 MiB keeps the binary easy to copy onto any login node.
[ "$size" -lt $((10 * 1024 * 1024)) ] || { echo "FAIL: $size bytes is over 10 MiB"; fails=1; }
# It runs in an empty environment.
env -i "$EZPZ_BIN" --version | grep -q '^ezpz ' || { echo "FAIL: does not run with env -i"; fails=1; }
[ "$fails" -eq 0 ] || exit 1
echo "static binary: $size bytes: $desc"
