#!/usr/bin/env bash
# Install every Debian 12 package that ezpz's build and test suite need.
# Idempotent: already-installed packages are skipped by apt. Run as root (or via sudo).
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
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

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
