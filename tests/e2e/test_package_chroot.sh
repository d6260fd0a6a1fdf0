#!/usr/bin/env bash
# The packaged static ezpz is self-contained: cpack's .tar.gz, installed by scripts/install.sh
# (checksum verified; a wrong one installs nothing), runs in a chroot that holds nothing but the
# package and a few /etc files: --version, env, a launch plan, and a real built-in launch of two
# ranks (each rank is ezpz itself: there is no other program in there).
set -u
: "${EZPZ_BUILD_DIR:?}" "${EZPZ_SOURCE_DIR:?}"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
[ "$(id -u)" -eq 0 ] || { echo "FAIL: chroot needs root (CI runs as root)"; exit 1; }
tmp=$(mktemp -d /var/tmp/ezpz-chroot-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cpack --config "$EZPZ_BUILD_DIR/CPackConfig.cmake" -G TGZ -B "$tmp/pkg" >/dev/null || { echo "FAIL: cpack"; exit 1; }
tarball=$(ls "$tmp"/pkg/ezpz-*-Linux.tar.gz)
[ -f "$tarball.sha256" ] || fail "cpack wrote no .sha256 beside $tarball"
for f in bin/ezpz share/man/man1/ezpz.1 share/man/man1/ezpz-yeet.1 share/bash-completion/completions/ezpz \
         share/zsh/vendor-completions/_ezpz share/fish/vendor_completions.d/ezpz.fish share/doc/ezpz/CONTENTS.md \
         share/ezpz/companion/scripts/build-companion.sh share/ezpz/companion/src/torch/CMakeLists.txt \
         share/ezpz/companion/src/core/train/parallel_layout.cpp share/ezpz/companion/include/ezpz/torch.hpp; do
  tar -tzf "$tarball" | grep -q "/$f\$" || fail "the package lacks $f"
done

# The .deb holds the same files under /usr, with a checksum, and depends on nothing.
cpack --config "$EZPZ_BUILD_DIR/CPackConfig.cmake" -G DEB -B "$tmp/deb" >/dev/null || fail "cpack -G DEB"
deb=$(ls "$tmp"/deb/ezpz_*.deb 2>/dev/null)
[ -f "$deb.sha256" ] || fail "cpack wrote no .sha256 beside the .deb"
listing=$(dpkg-deb -c "$deb")
for f in usr/bin/ezpz usr/share/man/man1/ezpz-kill.1 usr/share/bash-completion/completions/ezpz; do
  grep -q "\./$f\$" <<<"$listing" || fail "the .deb lacks $f"
done
grep -q "ezpz test (a distributed smoke training" <<<"$(dpkg-deb -f "$deb" Description)" ||
  fail "the .deb's description does not say what it holds: $(dpkg-deb -f "$deb" Description)"
[ -z "$(dpkg-deb -f "$deb" Depends)" ] || fail "the static .deb should depend on nothing: $(dpkg-deb -f "$deb" Depends)"

# A wrong checksum installs nothing.
if "$EZPZ_SOURCE_DIR/scripts/install.sh" --prefix "$tmp/bad" "$tarball" 0000 >/dev/null 2>&1; then
  fail "install.sh accepted a wrong checksum"
fi
[ ! -e "$tmp/bad" ] || fail "install.sh wrote $tmp/bad despite the wrong checksum"

root=$tmp/root
"$EZPZ_SOURCE_DIR/scripts/install.sh" --prefix "$root/usr" "$tarball" >/dev/null || fail "install.sh"
mkdir -p "$root/etc" "$root/tmp"
cp /etc/passwd /etc/group /etc/hosts /etc/nsswitch.conf "$root/etc/"
[ "$(find "$root/usr" -type f -perm -u+x)" = "$root/usr/bin/ezpz" ] || fail "the chroot should hold one program: $(find "$root/usr" -type f -perm -u+x)"
[ "$(ls "$root")" = "$(printf "etc\ntmp\nusr")" ] || fail "the chroot holds more than etc, tmp, usr: $(ls "$root")"
chroot_bin=$(command -v chroot) || { echo "FAIL: chroot (coreutils) is missing"; exit 1; }
in_root() { env -i HOME=/ PATH=/usr/bin USER=root "$chroot_bin" "$root" "$@"; }
out=$(in_root /usr/bin/ezpz --version 2>&1) || fail "--version in the chroot: $out"
grep -q "ezpz" <<<"$out" || fail "--version printed: $out"
out=$(in_root /usr/bin/ezpz env 2>&1) || fail "env in the chroot: $out"
grep -q "^export NHOSTS=1;" <<<"$out" || fail "env in the chroot: $out"
out=$(in_root /usr/bin/ezpz launch --dry-run --json --launcher local -n 2 -- /usr/bin/ezpz --version 2>&1) \
  || fail "launch --dry-run in the chroot: $out"
out=$(in_root /usr/bin/ezpz launch --launcher local -n 2 -- /usr/bin/ezpz --version 2>&1) \
  || fail "a 2-rank launch in the chroot: $out"
[ "$(grep -c "ezpz" <<<"$out")" -ge 2 ] || fail "both ranks should print the version: $out"

[ "$fails" -eq 0 ] || { echo "$fails package check(s) failed"; exit 1; }
echo "package: all checks passed"
