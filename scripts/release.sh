#!/usr/bin/env bash
# Release artifacts from one command, into OUTDIR:
#   ezpz-VERSION-linux-ARCH.tar.gz  ezpz-VERSION-linux-ARCH/{bin/ezpz, share/man/man1, completions
#                                   under share/, share/doc/ezpz (LICENSE, CONTENTS.md), the companion's sources}
#   install.sh                      scripts/install.sh: `curl -fsSL BASE/install.sh | sh`
#   SHA256SUMS                      of every tarball in OUTDIR and install.sh (install.sh and
#                                   `ezpz self-update` read it; older versions' lines stay when
#                                   their tarballs are still there)
#   SHA256SUMS.sig                  with --sign KEY (an Ed25519 private key, PEM: `openssl genpkey
#                                   -algorithm ed25519 -out KEY`): its signature of SHA256SUMS. The
#                                   clean build then embeds the public key (-DEZPZ_RELEASE_PUBLIC_KEY),
#                                   so its self-update takes only releases signed by KEY, and
#                                   install.sh checks it too (the key written into its default).
# By default from a clean release build: a clean checkout (else refused, unless --allow-dirty), a
# fresh build directory (build/release-dist), the release preset with -Werror. --build DIR packages
# the release build already in DIR instead (CI and the tests, which built it). The tarball is
# reproducible (sorted names, owner 0, mtimes of the commit).
# Usage: scripts/release.sh OUTDIR [--build DIR] [--allow-dirty] [--sign KEY]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "release.sh: $*" >&2; exit 1; }
out='' build='' dirty='' key=''
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=${2:?--build needs a build directory}; shift ;;
    --allow-dirty) dirty=1 ;;
    --sign) key=${2:?--sign needs an Ed25519 private key file (PEM)}; shift ;;
    -*) die "unknown option $1 (usage: release.sh OUTDIR [--build DIR] [--allow-dirty] [--sign KEY])" ;;
    *) [ -z "$out" ] || die "one OUTDIR only"; out=$1 ;;
  esac
  shift
done
[ -n "$out" ] || die "usage: release.sh OUTDIR [--build DIR] [--allow-dirty] [--sign KEY]"
mkdir -p "$out"
out=$(cd "$out" && pwd)
pub=''
if [ -n "$key" ]; then  # the public half as 64 hex digits: what the binary and install.sh carry
  pub=$(openssl pkey -in "$key" -pubout -outform DER 2>/dev/null | tail -c 32 | od -An -tx1 | tr -d ' \n')
  [ ${#pub} -eq 64 ] || die "$key is not an Ed25519 private key (PEM): make one with openssl genpkey -algorithm ed25519 -out $key"
fi

# 1. The build: the one given, or a clean one.
if [ -z "$build" ]; then
  if [ -z "$dirty" ] && [ -n "$(git -C "$src" status --porcelain --untracked-files=no)" ]; then
    die "the checkout has uncommitted changes: commit them (a release names its commit), or pass --allow-dirty"
  fi
  build=$src/build/release-dist
  rm -rf "$build"
  cmake -S "$src" -B "$build" --preset release -DEZPZ_WERROR=ON -DEZPZ_UNIT_TESTS=OFF \
    -DEZPZ_RELEASE_PUBLIC_KEY="$pub" >/dev/null
  cmake --build "$build" -j "$(nproc)"
fi
build=$(cd "$build" && pwd)
bin=$build/ezpz
[ -x "$bin" ] || die "$bin does not exist: build the release preset first (cmake --preset release; cmake --build --preset release)"
file -b "$bin" | grep -q "statically linked" || die "$bin is not statically linked: package the release preset's build"
if [ -n "$pub" ] && ! grep -qa "ezpz-release-key:$pub" "$bin"; then
  echo "release.sh: warning: $bin does not carry the key of $key: its self-update will not check signatures (configure it with -DEZPZ_RELEASE_PUBLIC_KEY=$pub)" >&2
fi

# 2. Its name: the version and the architecture it reports (`ezpz 0.1.0 (commit ..., static, x86_64)`);
# an aarch64 build made here (scripts/cross-aarch64.sh) asked through qemu-user.
run=("$bin")
case $(file -b "$bin") in
  *"ARM aarch64"*) [ "$(uname -m)" = aarch64 ] || run=(qemu-aarch64-static "$bin") ;;
esac
line=$("${run[@]}" --version)
version=$(sed -n 's/^ezpz \([^ ]*\) .*/\1/p' <<<"$line")
arch=$(sed -n 's/.*static, \([a-z0-9_]*\))$/\1/p' <<<"$line")
[ -n "$version" ] && [ -n "$arch" ] || die "cannot read the version and architecture from: $line"
name=ezpz-$version-linux-$arch

# 3. The tree: what `cmake --install` puts in a prefix (stripped), LICENSE beside it.
stage=$(mktemp -d "${TMPDIR:-/tmp}/ezpz-release.XXXXXX")
trap 'rm -rf "$stage"' EXIT
cmake --install "$build" --prefix "$stage/$name" --strip >/dev/null
cp "$src/LICENSE" "$stage/$name/LICENSE"
epoch=$(git -C "$src" log -1 --format=%ct 2>/dev/null || date +%s)
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -cf - "$name" | gzip -n -9 > "$stage/$name.tar.gz"
mv -f "$stage/$name.tar.gz" "$out/$name.tar.gz"
sed "s/^DEFAULT_PUBLIC_KEY=.*/DEFAULT_PUBLIC_KEY=$pub  # the release key (release.sh --sign)/" "$src/scripts/install.sh" \
  > "$out/install.sh.part" && chmod 0755 "$out/install.sh.part" && mv -f "$out/install.sh.part" "$out/install.sh"

# 4. SHA256SUMS of what OUTDIR holds, and its signature with --sign (an old one removed: it would not match).
(cd "$out" && sha256sum ezpz-*-linux-*.tar.gz install.sh > SHA256SUMS.part && mv -f SHA256SUMS.part SHA256SUMS)
rm -f "$out/SHA256SUMS.sig"
if [ -n "$key" ]; then
  openssl pkeyutl -sign -inkey "$key" -rawin -in "$out/SHA256SUMS" -out "$out/SHA256SUMS.sig.part" &&
    mv -f "$out/SHA256SUMS.sig.part" "$out/SHA256SUMS.sig" || die "cannot sign SHA256SUMS with $key"
  echo "release.sh: SHA256SUMS signed; the release key (EZPZ_RELEASE_PUBLIC_KEY): $pub"
fi
echo "release.sh: $line"
echo "release.sh: $out/$name.tar.gz ($(du -k "$out/$name.tar.gz" | cut -f1) KiB), $out/install.sh, $out/SHA256SUMS"
