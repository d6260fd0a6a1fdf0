#!/usr/bin/env bash
# Build ezpz's companion (libezpz_torch.so and ezpz-test-train, which `ezpz test --engine cpp`
# runs) against the torch of PYTHON (a pip or conda wheel: CUDA, ROCm or XPU; or Debian's), and
# install it where `ezpz test` finds it: PREFIX/bin/ezpz-test-train (default PREFIX ~/.local;
# ezpz also looks beside itself, on PATH, and at EZPZ_TORCH_TRAIN).
#
# Usage: scripts/build-companion.sh [PYTHON] [--prefix DIR] [--build-dir DIR] [--jobs N]
#   PYTHON       the python whose torch to build against (default: python3 on PATH)
#   --prefix     where to install (bin/, lib/, include/; default ~/.local)
#   --build-dir  where to build (default: a new directory under ${TMPDIR:-/tmp}, removed after)
#   --jobs       parallel compile jobs (default: the number of cores)
#   BUILD_TYPE   (environment) the CMake build type (default Release)
#   CMAKE_ARGS   (environment) more CMake options, split at spaces (e.g. -DCMAKE_CXX_COMPILER=g++-12)
# Needs CMake >= 3.18 and a C++20 compiler; nothing else of ezpz's build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python=python3 prefix="$HOME/.local" build_dir="" jobs=$(nproc 2>/dev/null || echo 2)
die() { echo "build-companion: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --build-dir) build_dir=${2:?--build-dir needs a directory}; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) python=$1; shift ;;
  esac
done
command -v cmake >/dev/null || die "cmake is not on PATH: load a cmake module or pip install cmake"
command -v "$python" >/dev/null || die "no $python found: pass the python whose torch to use"

# 1. What that python's torch is: where its CMake files are, its C++ ABI, its accelerator.
facts=$("$python" - <<'PY'
import glob, os, sys
try:
    import torch
except Exception as e:
    print(f"cannot import torch: {type(e).__name__}: {e}")
    sys.exit(1)
prefix = torch.utils.cmake_prefix_path
config = os.path.join(prefix, "Torch", "TorchConfig.cmake")
if not os.path.exists(config):  # Debian's python3-torch: the CMake files are libtorch-dev's
    found = glob.glob("/usr/lib/*/cmake/Torch/TorchConfig.cmake") + glob.glob("/usr/share/cmake/Torch/TorchConfig.cmake")
    config = found[0] if found else ""
accel = ("cuda " + torch.version.cuda) if torch.version.cuda else ("rocm " + torch.version.hip) \
    if getattr(torch.version, "hip", None) else "xpu" if hasattr(torch, "xpu") and torch.xpu.is_available() else "cpu"
print(torch.__version__)
print(os.path.dirname(os.path.dirname(config)) if config else "")
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
print(accel)
print(os.path.dirname(torch.__file__))
PY
) || die "$python: ${facts:-cannot import torch}: activate the environment that has torch, or pass its python"
{ read -r version; read -r cmake_dir; read -r abi; read -r accel; read -r torch_dir; } <<<"$facts"
[ -n "$cmake_dir" ] || die "torch $version at $torch_dir ships no TorchConfig.cmake (install libtorch-dev for Debian's torch)"
echo "build-companion: torch $version ($accel, C++11 ABI $abi) from $torch_dir; CMake files in $cmake_dir"

# 2. Configure, build and install src/torch as a project of its own.
if [ -z "$build_dir" ]; then
  build_dir=$(mktemp -d "${TMPDIR:-/tmp}/ezpz-companion-XXXXXX")
  trap 'rm -rf "$build_dir"' EXIT
fi
read -r -a extra <<<"${CMAKE_ARGS:-}"
cmake -S "$root/src/torch" -B "$build_dir" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
  -DCMAKE_PREFIX_PATH="$cmake_dir" -DCMAKE_INSTALL_PREFIX="$prefix" "${extra[@]}" >"$build_dir.configure.log" 2>&1 ||
  { cat "$build_dir.configure.log" >&2; rm -f "$build_dir.configure.log"; die "configure failed (above)"; }
rm -f "$build_dir.configure.log"
cmake --build "$build_dir" -j "$jobs"
cmake --install "$build_dir" >/dev/null

# 3. It must load where it was installed (libtorch found through its RPATH).
"$prefix/bin/ezpz-test-train" --help >/dev/null ||
  die "$prefix/bin/ezpz-test-train was built but does not start: see the error above"
echo "build-companion: installed $prefix/bin/ezpz-test-train and $prefix/lib/libezpz_torch.so"
echo "build-companion: check it with: ezpz test --engine cpp -n 2"
