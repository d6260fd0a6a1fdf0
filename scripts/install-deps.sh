#!/usr/bin/env bash
# Install every Debian 12 package that ezpz's build and test suite need.
# Idempotent: already-installed packages are skipped by apt. Run as root (or via sudo).
# --aarch64: instead, what scripts/cross-aarch64.sh needs to cross-build the static linux-aarch64
# binary: Debian's cross compiler, the arm64 -dev packages (multiarch, beside the native ones) and
# qemu-user-static to run what it built.
set -euo pipefail

packages=(
  # toolchain
  cmake ninja-build g++ pkg-config file clang-format clang-tidy iwyu shellcheck
  # libFuzzer targets (scripts/fuzz.sh, cmake --preset fuzz) and the relay under valgrind
  clang valgrind
  # header-only / static libraries the CLI links
  libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libtomlplusplus-dev catch2
  # archives for yeet and tar-env, linked statically (tar/pax + zstd/gzip only)
  libarchive-dev libzstd-dev zlib1g-dev liblzma-dev libbz2-dev liblz4-dev nettle-dev libacl1-dev libxml2-dev zstd
  # yeet's in-process SSH transport (libssh + OpenSSL's libcrypto, linked statically)
  libssh-dev libssl-dev
  # incremental yeet (deltas)
  librsync-dev
  # launchers used by end-to-end tests (real mpiexec/mpirun)
  openmpi-bin libopenmpi-dev mpich
  # the multi-node test bed (scripts/cluster-sim): namespaces, sshd, Slurm
  iproute2 openssh-server openssh-client util-linux slurm-wlm munge
  # real PyTorch for the gloo rank-environment tests
  python3-torch
  # the companion library (libezpz_torch.so): libtorch and the c10d (gloo) headers
  libtorch-dev libgloo-dev
  # tools the test scripts use
  python3 python3-venv procps bsdutils zsh fish
  # release.sh --sign and install.sh check a release's signature with it (test_install)
  openssl
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

if [ "${1:-}" = --aarch64 ]; then
  packages=(crossbuild-essential-arm64 qemu-user-static file
    libarchive-dev:arm64 libzstd-dev:arm64 zlib1g-dev:arm64 liblzma-dev:arm64 libbz2-dev:arm64 liblz4-dev:arm64
    nettle-dev:arm64 libacl1-dev:arm64 libxml2-dev:arm64 libssh-dev:arm64 libssl-dev:arm64 librsync-dev:arm64
    libspdlog-dev:arm64 libfmt-dev:arm64)
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $SUDO dpkg --add-architecture arm64
    $SUDO apt-get update -qq
  fi
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
