# Sourced by check-tidy.sh and check-includes.sh (bash): what a gate checks. After
# `gate_sources NAME "$@"`, the array `sources` holds the files given, or with `--recent N` the
# sources of src/cli, src/core and src/sys the last N commits touched, newest first, at most
# EZPZ_TIDY_MAX_FILES (30): CI's time stays bounded whatever a commit touched (run a gate on all of
# src/ after a change to many files). It exits 0 when --recent finds none. Also checks that the
# build (EZPZ_TIDY_BUILD, default build/dev) has a compile_commands.json, and sets `build`.
gate_sources() {
  local name=$1 n base
  shift
  build=${EZPZ_TIDY_BUILD:-build/dev}
  [ -f "$build/compile_commands.json" ] || { echo "$name: configure the dev preset first (cmake --preset dev)" >&2; exit 2; }
  sources=("$@")
  [ "${1:-}" = --recent ] || return 0
  n=${2:?--recent N}
  base=$(git rev-list --max-count=1 --skip="$n" HEAD 2>/dev/null || true)
  [ -n "$base" ] || base=$(git rev-list --max-parents=0 HEAD | tail -1)
  mapfile -t sources < <(git log --format= --name-only --diff-filter=AMR "$base..HEAD" -- 'src/cli/*.cpp' \
    'src/core/*.cpp' 'src/sys/*.cpp' | awk 'NF && !seen[$0]++' | while read -r f; do [ -f "$f" ] && echo "$f"; done |
    head -n "${EZPZ_TIDY_MAX_FILES:-30}")
  if [ ${#sources[@]} -eq 0 ]; then
    echo "$name: no source of src/cli, src/core or src/sys changed in the last $n commits"
    exit 0
  fi
  echo "$name: ${#sources[@]} sources the last $n commits touched (newest first, at most ${EZPZ_TIDY_MAX_FILES:-30})"
}
