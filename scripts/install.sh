#!/bin/sh
# Install or repair ezpz (the static binary, its man pages; completions when asked), checked
# before anything is replaced. POSIX sh: it runs as `curl -fsSL URL/install.sh | sh` and as a file.
#
#   install.sh [--prefix DIR] [--version V] [--base-url URL] [--public-key HEX] [--completions] [--force]
#       Download ezpz-V-linux-ARCH.tar.gz (V: the newest in SHA256SUMS unless --version) and
#       SHA256SUMS from URL (EZPZ_INSTALL_BASE_URL; default: the project's latest release).
#       With a release key (HEX: an Ed25519 public key as 64 hex digits; --public-key,
#       EZPZ_INSTALL_PUBLIC_KEY, or the one release.sh --sign wrote below), SHA256SUMS.sig must be
#       its signature of SHA256SUMS (checked with openssl) before SHA256SUMS is believed.
#   install.sh [--prefix DIR] [--completions] [--force] TARBALL [SHA256]
#       Install a tarball already downloaded; its checksum from SHA256, else TARBALL.sha256 or
#       SHA256SUMS beside it.
#
# DIR defaults to ~/.local: DIR/bin/ezpz, DIR/share/man/man1, DIR/share/doc/ezpz. Nothing is
# replaced until the tarball's SHA-256 matches; each file goes in place by a rename. Refused inside
# a PBS or Slurm job (compute nodes usually have no outbound network) unless --force. Needs curl or
# wget for a download; HTTPS, or plain HTTP to this machine (127.0.0.1, ::1, localhost) only. It
# never edits shell start-up files: it prints the PATH line to add. Running it again repairs an
# install. Exit status: 0 installed; 1 failed (nothing changed); 2 usage.
# (A tarball given with SHA256SUMS beside it: SHA256SUMS.sig is checked too when there is a key.)
set -eu

DEFAULT_BASE_URL=https://github.com/saforem2/ezpz/releases/latest/download
DEFAULT_PUBLIC_KEY=  # release.sh --sign writes the release key here
prog=install.sh
die() { echo "$prog: $*" >&2; exit 1; }
usage() { echo "$prog: $*" >&2; echo "usage: install.sh [--prefix DIR] [--version V] [--base-url URL] [--public-key HEX] [--completions] [--force] [TARBALL [SHA256]]" >&2; exit 2; }

prefix=${HOME:?HOME is not set}/.local
version=
base_url=${EZPZ_INSTALL_BASE_URL:-$DEFAULT_BASE_URL}
public_key=${EZPZ_INSTALL_PUBLIC_KEY:-$DEFAULT_PUBLIC_KEY}
completions=
force=
tarball=
want=
while [ $# -gt 0 ]; do
  case $1 in
    --prefix) [ $# -ge 2 ] || usage "--prefix needs a directory"; prefix=$2; shift ;;
    --prefix=*) prefix=${1#--prefix=} ;;
    --version) [ $# -ge 2 ] || usage "--version needs a version (such as 0.2.0)"; version=$2; shift ;;
    --version=*) version=${1#--version=} ;;
    --base-url) [ $# -ge 2 ] || usage "--base-url needs a URL"; base_url=$2; shift ;;
    --base-url=*) base_url=${1#--base-url=} ;;
    --public-key) [ $# -ge 2 ] || usage "--public-key needs a key (64 hex digits)"; public_key=$2; shift ;;
    --public-key=*) public_key=${1#--public-key=} ;;
    --completions) completions=1 ;;
    --force) force=1 ;;
    -h|--help) sed -n '2,22s/^# \{0,1\}//p' "$0" 2>/dev/null || true; exit 0 ;;
    -*) usage "unknown option $1" ;;
    *) if [ -z "$tarball" ]; then tarball=$1; elif [ -z "$want" ]; then want=$1; else usage "one tarball and one checksum at most"; fi ;;
  esac
  shift
done
case $prefix in /*) ;; *) prefix=$(pwd)/$prefix ;; esac
public_key=$(printf '%s' "$public_key" | tr 'A-F' 'a-f')
case $public_key in
  '') ;;
  *[!0-9a-f]*) usage "--public-key: not an Ed25519 public key as 64 hex digits: $public_key" ;;
  *) [ ${#public_key} -eq 64 ] || usage "--public-key: not an Ed25519 public key as 64 hex digits: $public_key" ;;
esac

# 1. Not inside a job: its nodes usually cannot download, and a job's PATH is not a login shell's.
if [ -z "$force" ]; then
  for var in SLURM_JOB_ID PBS_JOBID; do
    eval "val=\${$var:-}"
    # shellcheck disable=SC2154
    [ -z "$val" ] || die "inside a batch job ($var=$val): compute nodes usually have no outbound network; run it on a login node, or pass --force"
  done
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ezpz-install.XXXXXX") || die "cannot make a private work directory in ${TMPDIR:-/tmp}"
stage=
cleanup() { rm -rf "$work"; [ -z "$stage" ] || rm -rf "$stage"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum < "$1" | cut -d' ' -f1
  elif command -v shasum >/dev/null 2>&1; then shasum -a 256 < "$1" | cut -d' ' -f1
  else openssl dgst -sha256 < "$1" | sed 's/.*= *//'; fi
}

# HTTPS, or plain HTTP to this machine only (a test server, a local mirror).
check_url() {
  case $1 in
    https://*) ;;
    http://127.*|http://localhost|http://localhost[:/]*|http://\[::1\]*) ;;
    *) die "$1: not HTTPS (plain HTTP is accepted from this machine only): pass an https:// --base-url" ;;
  esac
}

# fetch URL FILE: download with curl or wget; a failure says which URL and why, in one line.
fetch() {
  if command -v curl >/dev/null 2>&1; then
    if ! curl -fsSL --retry 2 --connect-timeout 20 -o "$2" "$1" 2>"$work/fetch.err"; then
      why=$(tail -n 1 "$work/fetch.err" | sed 's/^curl: ([0-9]*) //')
      die "cannot download $1: ${why:-curl failed} (nothing installed)"
    fi
  elif command -v wget >/dev/null 2>&1; then
    code=0
    wget -q -T 20 -O "$2" "$1" 2>"$work/fetch.err" || code=$?
    if [ "$code" -ne 0 ]; then
      case $code in 4) why="network failure (is the machine online?)" ;; 8) why="the server answered with an error (a wrong version or --base-url?)" ;; *) why="wget exit $code" ;; esac
      die "cannot download $1: $why (nothing installed)"
    fi
  else
    die "neither curl nor wget is installed: install one, or download the tarball and run install.sh TARBALL"
  fi
}

# check_signed SUMS SIG WHERE: SIG is the release key's Ed25519 signature of SUMS (openssl), or die.
check_signed() {
  command -v openssl >/dev/null 2>&1 || die "checking the release's signature needs openssl: install it (nothing installed)"
  # The key as DER: the Ed25519 SubjectPublicKeyInfo prefix, then its 32 bytes (octal escapes: POSIX printf).
  # shellcheck disable=SC2059
  printf "$(printf '302a300506032b6570032100%s' "$public_key" | awk '{
    for (i = 1; i < length($0); i += 2)
      printf "\\%03o", (index("0123456789abcdef", substr($0, i, 1)) - 1) * 16 + index("0123456789abcdef", substr($0, i + 1, 1)) - 1
  }')" > "$work/release-key.der"
  openssl pkeyutl -verify -pubin -keyform DER -inkey "$work/release-key.der" -rawin -in "$1" -sigfile "$2" \
    >/dev/null 2>&1 ||
    die "$3 is not a signature of SHA256SUMS by the release key $(printf '%.16s' "$public_key")...: tampered with, or another publisher's release (nothing installed)"
}

arch_name() {
  case $(uname -m) in
    x86_64|amd64) echo x86_64 ;;
    aarch64|arm64) echo aarch64 ;;
    *) die "no ezpz build for $(uname -m) (there are linux-x86_64 and linux-aarch64)" ;;
  esac
}

# 2. The tarball and its checksum: downloaded, or given.
if [ -z "$tarball" ]; then
  base_url=${base_url%/}
  check_url "$base_url"
  arch=$(arch_name)
  fetch "$base_url/SHA256SUMS" "$work/SHA256SUMS"
  if [ -n "$public_key" ]; then
    fetch "$base_url/SHA256SUMS.sig" "$work/SHA256SUMS.sig"
    check_signed "$work/SHA256SUMS" "$work/SHA256SUMS.sig" "$base_url/SHA256SUMS.sig"
  fi
  if [ -n "$version" ]; then
    name=ezpz-$version-linux-$arch.tar.gz
  else  # the newest version SHA256SUMS lists for this machine
    name=$(sed -n "s/^[0-9a-f]\{64\}  \(ezpz-[^ ]*-linux-$arch\.tar\.gz\)$/\1/p" "$work/SHA256SUMS" |
      sed "s/^ezpz-\(.*\)-linux-$arch\.tar\.gz$/\1 &/" | sort -t. -k1,1n -k2,2n -k3,3n | tail -n 1 | cut -d' ' -f2)
    [ -n "$name" ] || die "$base_url/SHA256SUMS lists no build for linux-$arch"
  fi
  want=$(sed -n "s/^\([0-9a-f]\{64\}\)  $name\$/\1/p" "$work/SHA256SUMS" | head -n 1)
  [ -n "$want" ] || die "$base_url/SHA256SUMS does not list $name (no such version for linux-$arch?)"
  fetch "$base_url/$name" "$work/$name.part"
  tarball=$work/$name
  mv "$work/$name.part" "$tarball"
else
  [ -f "$tarball" ] || die "$tarball does not exist: pass the path of the downloaded .tar.gz"
  if [ -z "$want" ] && [ -f "$tarball.sha256" ]; then
    want=$(cut -d' ' -f1 < "$tarball.sha256")
  elif [ -z "$want" ] && [ -f "$(dirname "$tarball")/SHA256SUMS" ]; then
    if [ -n "$public_key" ]; then
      sums=$(dirname "$tarball")/SHA256SUMS
      [ -f "$sums.sig" ] || die "no $sums.sig beside it: download SHA256SUMS.sig too (this install.sh checks the release key's signature)"
      check_signed "$sums" "$sums.sig" "$sums.sig"
    fi
    want=$(sed -n "s/^\([0-9a-f]\{64\}\)  $(basename "$tarball")\$/\1/p" "$(dirname "$tarball")/SHA256SUMS" | head -n 1)
  fi
  [ -n "$want" ] || die "no checksum for $tarball: pass it as the second argument, or put $tarball.sha256 or SHA256SUMS beside it"
fi

# 3. Checked before anything is replaced.
got=$(sha256_of "$tarball")
[ "$got" = "$want" ] || die "SHA-256 of $(basename "$tarball") is $got, expected $want: damaged or tampered with; download it again (nothing installed)"
mkdir "$work/x"
tar -xzf "$tarball" -C "$work/x" 2>"$work/tar.err" || die "cannot unpack $(basename "$tarball"): $(tail -n 1 "$work/tar.err")"
top=$(find "$work/x" -mindepth 1 -maxdepth 1 -type d | head -n 1)
[ -n "$top" ] && [ -x "$top/bin/ezpz" ] || die "$(basename "$tarball") holds no bin/ezpz"
new_version=$("$top/bin/ezpz" --version 2>/dev/null) || die "the ezpz in $(basename "$tarball") does not run on this machine (another architecture?)"

# 4. In place, each file by a rename from a copy beside it (on the prefix's filesystem): a
# failure (a full disk, a read-only prefix) leaves the previous install as it was.
mkdir -p "$prefix" 2>"$work/mkdir.err" || die "cannot create $prefix: $(tail -n 1 "$work/mkdir.err")"
stage=$(mktemp -d "$prefix/.ezpz-install.XXXXXX" 2>/dev/null) || die "cannot write to $prefix (read-only, or not yours?): pass --prefix DIR"
files="bin/ezpz"
for f in $(cd "$top" && find share -type f | sort); do
  case $f in
    share/bash-completion/*|share/zsh/*|share/fish/*) ;;  # completions only when asked (below)
    *) files="$files $f" ;;
  esac
done
for f in $files; do
  mkdir -p "$stage/$(dirname "$f")" && cp -p "$top/$f" "$stage/$f" 2>"$work/cp.err" ||
    die "cannot write to $prefix: $(tail -n 1 "$work/cp.err") (disk full?); the previous install is unchanged"
done
for f in $files; do
  mkdir -p "$prefix/$(dirname "$f")" && mv -f "$stage/$f" "$prefix/$f" ||
    die "cannot move $f into $prefix; run install.sh again to repair"
done

# 5. Completions, when asked: where each shell finds a user's own.
if [ -n "$completions" ]; then
  data=$prefix/share
  conf=${XDG_CONFIG_HOME:-$HOME/.config}
  for pair in "bash-completion/completions/ezpz:$data/bash-completion/completions/ezpz" \
              "zsh/vendor-completions/_ezpz:$data/zsh/site-functions/_ezpz" \
              "fish/vendor_completions.d/ezpz.fish:$conf/fish/completions/ezpz.fish"; do
    from=$top/share/${pair%%:*}
    to=${pair#*:}
    [ -f "$from" ] || continue
    mkdir -p "$(dirname "$to")" && cp "$from" "$to.part" && mv -f "$to.part" "$to" || die "cannot write $to"
    echo "completion: $to"
  done
  echo "zsh: add 'fpath=($data/zsh/site-functions \$fpath)' before compinit in ~/.zshrc if it is not there"
fi

echo "installed $new_version into $prefix/bin/ezpz"
case ":${PATH:-}:" in
  *":$prefix/bin:"*) ;;
  *) echo "add it to PATH (in ~/.bashrc or your shell's start-up file): export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
