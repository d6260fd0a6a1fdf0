#!/usr/bin/env bash
# The companion library on a GPU node, against that node's own torch (a pip or conda wheel):
# build libezpz_torch, ezpz-test-train and the multi-rank checks (tests/torch/torch_checks.cpp),
# then run them and `ezpz test` (both engines) on the GPUs through ezpz's built-in launcher.
# CI has no GPU: this is the check a session with a GPU machine runs, and what a site runs after
# building the companion (scripts/build-companion.sh) for its torch.
#
# Usage: scripts/gpu-check.sh [EZPZ]     (EZPZ: the ezpz binary; default build/release/ezpz)
#   PYTHON   the python whose torch to build against and run (default python3)
#   JOBS     parallel compile jobs (default: the number of cores)
#   LOGS     a directory for each step's output (default: a temporary one, removed)
# Prints one line per step (PASS, FAIL or INFO) and exits 1 when a required step failed.
# With one GPU, NCCL cannot join two ranks (NCCL refuses two ranks on one device), so the
# two-rank steps use gloo on CUDA tensors; with two or more GPUs, NCCL runs across all of them.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ezpz=$(realpath "${1:-$root/build/release/ezpz}")
python=${PYTHON:-python3}
jobs=${JOBS:-$(nproc)}
logs=${LOGS:-}
[ -x "$ezpz" ] || { echo "gpu-check: no ezpz at $ezpz: build it (cmake --preset release) or pass its path" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ezpz-gpu-check-XXXXXX")
trap 'rm -rf "$work"' EXIT
[ -n "$logs" ] || logs=$work/logs
mkdir -p "$logs"
failed=0

# step NAME REQUIRED CMD...: runs CMD, its output in $logs/NAME.log; PASS/FAIL (INFO if not required).
step() {
  local name=$1 required=$2 start rc
  shift 2
  start=$(date +%s.%N)
  "$@" >"$logs/$name.log" 2>&1
  rc=$?
  local took
  took=$(python3 -c "import sys;print(f'{float(sys.argv[2])-float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")
  if [ "$rc" -eq 0 ]; then
    echo "PASS $name (${took} s)"
  elif [ "$required" = yes ]; then
    echo "FAIL $name: exit $rc (${took} s); last lines of $logs/$name.log:"
    tail -n 25 "$logs/$name.log" | sed 's/^/    /'
    failed=1
  else
    echo "INFO $name: exit $rc (${took} s); last lines:"
    tail -n 6 "$logs/$name.log" | sed 's/^/    /'
  fi
  return "$rc"
}

# 1. What this node has.
nvidia-smi -L 2>/dev/null | sed 's/^/gpu-check: /'
facts=$("$python" -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.device_count(),
  torch.cuda.nccl.version() if torch.cuda.is_available() else "-")') ||
  { echo "gpu-check: $python cannot import torch" >&2; exit 2; }
read -r tv cuda gpus nccl <<<"$facts"
echo "gpu-check: torch $tv, CUDA $cuda, $gpus GPU(s), NCCL $nccl; ezpz $("$ezpz" --version | head -1)"
[ "$gpus" -ge 1 ] || { echo "gpu-check: torch sees no GPU here" >&2; exit 2; }

# 2. Build the library, ezpz-test-train and the checks against this torch, as build-companion.sh does
# (warnings stay warnings: GCC 13 warns of array bounds inside libstdc++ inlined from torch headers).
cmake_dir=$("$python" -c 'import torch;print(torch.utils.cmake_prefix_path)')
step configure yes cmake -S "$root/src/torch" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DEZPZ_TORCH_CHECKS=ON -DCMAKE_PREFIX_PATH="$cmake_dir" || exit 1
grep -h 'libezpz_torch' "$logs/configure.log" | sed 's/^-- /gpu-check: /'
step build yes cmake --build "$work/build" -j "$jobs" || exit 1
checks=$work/build/ezpz_torch_checks
export EZPZ_TORCH_TRAIN=$work/build/ezpz-test-train OMP_NUM_THREADS=4 EZPZ_HOME=$work/home

# 3. The library's checks on the GPU: one rank (cuda, nccl chosen), then two or more.
step cuda_1_on_device yes env TORCH_DEVICE=cuda "$ezpz" launch --launcher local -n 1 -- "$checks" on_device
for scenario in on_device:2 tp_layers:2 data_parallel:2 groups:4 on_device:4; do
  n=${scenario#*:} scenario=${scenario%:*}
  step "cuda_gloo_${n}_${scenario}" yes env TORCH_DEVICE=cuda TORCH_BACKEND=gloo \
    "$ezpz" launch --launcher local -n "$n" -- "$checks" "$scenario"
done
if [ "$gpus" -ge 2 ]; then
  step "cuda_nccl_${gpus}_on_device" yes env TORCH_DEVICE=cuda TORCH_BACKEND=nccl \
    "$ezpz" launch --launcher local -n "$gpus" -- "$checks" on_device
else
  # What a user sees who asks for NCCL with more ranks than GPUs (informational).
  step "cuda_nccl_2_on_one_gpu" no env TORCH_DEVICE=cuda TORCH_BACKEND=nccl \
    "$ezpz" launch --launcher local -n 2 --kill-after 5 --time-limit 120 -- "$checks" on_device
fi
grep -h '^device=' "$logs"/cuda_*.log | sort | uniq -c | sed 's/^ */gpu-check: ran on: /'

# 4. `ezpz test`, both engines, on the GPU: the companion program (cpp) and this python's torch.
for engine in cpp python; do
  step "ezpz_test_${engine}_1" yes env TORCH_DEVICE=cuda "$ezpz" test --engine "$engine" --python "$python" -n 1 \
    --train-iters 50 --outdir "$work/out-$engine-1"
  step "ezpz_test_${engine}_2_gloo" yes env TORCH_DEVICE=cuda TORCH_BACKEND=gloo "$ezpz" test --engine "$engine" \
    --python "$python" -n 2 --train-iters 50 --outdir "$work/out-$engine-2"
done
grep -H -E '^(ezpz test:|summary:)' "$logs"/ezpz_test_*.log | sed "s|^$logs/||; s/^/    /"
[ "$failed" -eq 0 ] && echo "gpu-check: all required steps passed" || echo "gpu-check: some required steps failed"
exit "$failed"
