#!/usr/bin/env bash
# -DEZPZ_RELEASE_PUBLIC_KEY=HEX (what scripts/release.sh --sign passes): 64 hex digits are taken,
# lowercased, into cli/version_stamp.cpp's key slot; anything else stops the configure with the
# fix; none leaves the slot's 64 dots (no key). A configure each, no build.
set -uo pipefail
src=${EZPZ_SOURCE_DIR:?}
work=$(mktemp -d /tmp/ezpz-key-option.XXXXXX)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
defined() {  # defined DIR: the key version_stamp.cpp is compiled with
  (cd "$1" && ninja -t commands ezpz | grep 'version_stamp.cpp' | grep -o 'EZPZ_RELEASE_KEY=[^ ]*' | head -1 | tr -d '\\"')
}
configure() {  # configure DIR [KEY]
  cmake -S "$src" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEZPZ_TORCH=OFF -DEZPZ_BUILD_TESTS=OFF \
    ${2+"-DEZPZ_RELEASE_PUBLIC_KEY=$2"} > "$1.log" 2>&1
}
key=$(printf 'AB%.0s' $(seq 1 32))
configure "$work/good" "$key" || fail "a 64-hex-digit key was refused: $(tail -5 "$work/good.log")"
[ "$(defined "$work/good")" = "EZPZ_RELEASE_KEY=$(printf 'ab%.0s' $(seq 1 32))" ] || fail "key slot: $(defined "$work/good")"
configure "$work/none" || fail "no key: $(tail -5 "$work/none.log")"
[ "$(defined "$work/none")" = "EZPZ_RELEASE_KEY=$(printf '.%.0s' $(seq 1 64))" ] || fail "no-key slot: $(defined "$work/none")"
for bad in "${key}0" "${key:1}" "$(printf 'zz%.0s' $(seq 1 32))"; do
  if configure "$work/bad" "$bad"; then
    fail "key $bad was taken"
  else
    grep -q "EZPZ_RELEASE_PUBLIC_KEY is not 64 hex digits" "$work/bad.log" || fail "key $bad: $(tail -3 "$work/bad.log")"
  fi
  rm -rf "$work/bad"
done
[ "$fails" -eq 0 ] && echo "release key option: all passed"
exit $((fails > 0))
