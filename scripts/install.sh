#!/usr/bin/env bash
# Install a packaged ezpz (the .tar.gz from cpack) after checking its SHA-256.
#   scripts/install.sh [--prefix DIR] ezpz-VERSION-Linux.tar.gz [SHA256]
# The checksum comes from the argument, else from the .sha256 file beside the tarball (as cpack
# writes it); a mismatch or a missing checksum installs nothing. Default prefix: ~/.local.
# Puts bin/ezpz, man pages and bash/zsh/fish completions under the prefix.
set -euo pipefail
die() { echo "install.sh: $*" >&2; exit 1; }
prefix="$HOME/.local"
if [ "${1:-}" = "--prefix" ]; then prefix=${2:?--prefix needs a directory}; shift 2; fi
tarball=${1:?usage: install.sh [--prefix DIR] ezpz-VERSION-Linux.tar.gz [SHA256]}
[ -f "$tarball" ] || die "$tarball does not exist: pass the path of the downloaded .tar.gz"
want=${2:-}
if [ -z "$want" ]; then
  [ -f "$tarball.sha256" ] || die "no checksum: pass it as the second argument or put $tarball.sha256 beside it"
  want=$(cut -d' ' -f1 < "$tarball.sha256")
fi
got=$(sha256sum < "$tarball" | cut -d' ' -f1)
[ "$got" = "$want" ] || die "SHA-256 of $tarball is $got, expected $want: download it again (nothing installed)"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
tar -xzf "$tarball" -C "$work"
top=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -1)
[ -x "$top/bin/ezpz" ] || die "$tarball holds no bin/ezpz"
"$top/bin/ezpz" --version >/dev/null || die "the packaged ezpz does not run on this machine"
mkdir -p "$prefix"
cp -R "$top/." "$prefix/"
echo "installed $("$prefix/bin/ezpz" --version) into $prefix"
case ":$PATH:" in *":$prefix/bin:"*) ;; *) echo "add $prefix/bin to PATH" ;; esac
