#!/usr/bin/env bash
# libezpz_torch's numbers (issue 6): setup() for 4 local ranks (target < 1 s) and all_reduce of
# 64 MB fp32 over gloo through the library vs c10d's ProcessGroupGloo directly (target within 10%).
# Usage: scripts/bench/allreduce.sh [BUILD_DIR] [RUNS]   (default build/dev, 3 runs)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/dev}
runs=${2:-3}
bench=$build/tests/torch/ezpz_torch_bench
if [[ ! -x $bench ]]; then
  echo "allreduce.sh: $bench is not built: build a dynamic preset with libtorch (cmake --build $build)" >&2
  exit 1
fi
echo "# $(nproc) cores, $(uname -sr), libtorch $(dpkg-query -W -f '${Version}' libtorch-dev 2>/dev/null || echo '?')"
for i in $(seq "$runs"); do
  echo "## run $i: ezpz launch --launcher local -n 4 -- ezpz_torch_bench 20 64"
  OMP_NUM_THREADS=1 "$build/ezpz" launch --launcher local -n 4 -- "$bench" 20 64
done
