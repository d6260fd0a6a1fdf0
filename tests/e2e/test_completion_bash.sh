#!/usr/bin/env bash
# Drive the generated bash completion the way bash does: set COMP_WORDS, call _ezpz.
set -u
script="$EZPZ_SOURCE_DIR/completions/ezpz.bash"
# shellcheck source=/dev/null
source "$script"
fails=0
complete_words() {  # complete_words WORD... ; the last word is the one being completed
  COMP_WORDS=("$@")
  COMP_CWORD=$(($# - 1))
  COMPREPLY=()
  _ezpz
  printf '%s\n' "${COMPREPLY[@]}"
}
expect() {  # expect "<needle>" WORD...
  local needle=$1; shift
  local got
  got=$(complete_words "$@")
  if ! grep -qx -- "$needle" <<<"$got"; then
    echo "FAIL: completing [$*] did not offer '$needle'; got: $(tr '\n' ' ' <<<"$got")"
    fails=$((fails + 1))
  fi
}
reject() {  # reject "<needle>" WORD...
  local needle=$1; shift
  if complete_words "$@" | grep -qx -- "$needle"; then
    echo "FAIL: completing [$*] offered '$needle'"
    fails=$((fails + 1))
  fi
}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
touch "$tmp/hosts.txt"

expect launch ezpz la
expect completions ezpz ""
expect --version ezpz --ver
expect --machine ezpz launch --mach
expect --dry-run ezpz launch -n 4 --dr
expect aurora ezpz launch --machine au
expect perlmutter ezpz launch --machine ""
expect mpiexec ezpz launch --launcher mpi
expect "$tmp/hosts.txt" ezpz launch --hostfile "$tmp/ho"
expect bash ezpz completions ""
expect zsh ezpz completions z
expect launch ezpz help l
expect bash ezpz launch -- ba        # the command after -- completes as a program
reject --machine ezpz launch -- python3 --mach   # ...and nothing after it is ezpz's
reject aurora ezpz launch -n au      # a value of -n is not a machine
reject --np ezpz launch --n          # aliases are understood, not offered
reject --world_size ezpz launch --w
expect --nproc ezpz launch --npr
reject bash ezpz launch --np ba       # ...and their values are still values (not commands)
expect INT ezpz kill --signal I
expect polaris ezpz env --machine pol
expect polaris ezpz launch --machine = pol   # --machine=pol, as bash splits it

if [ "$fails" -ne 0 ]; then
  echo "$fails bash completion check(s) failed"
  exit 1
fi
echo "bash completion: all checks passed"
