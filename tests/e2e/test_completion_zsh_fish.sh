#!/usr/bin/env bash
# The zsh and fish scripts parse, and fish offers the right words.
set -eu
dir="$EZPZ_SOURCE_DIR/completions"
# Both shells are installed by scripts/install-deps.sh: a missing one fails, it never passes unchecked.
for sh in zsh fish; do
  command -v "$sh" >/dev/null || { echo "FAIL: $sh is missing: run scripts/install-deps.sh"; exit 1; }
done
zsh -n "$dir/_ezpz"
zsh -fc "autoload -U compinit; compinit -u -D; source '$dir/_ezpz' 2>/dev/null; whence -w _ezpz" | grep -q function
fish -n "$dir/ezpz.fish"
fails=0
check() {  # check NEEDLE COMMANDLINE
  if ! fish -c "source '$dir/ezpz.fish'; complete -C '$2'" | cut -f1 | grep -qx -- "$1"; then
    echo "FAIL: fish completing '$2' did not offer '$1'"
    fails=$((fails + 1))
  fi
}
check launch "ezpz la"
check aurora "ezpz launch --machine "
check --dry-run "ezpz launch --dry"
check fish "ezpz completions "
check srun "ezpz launch --launcher "
check INT "ezpz kill --signal "
check polaris "ezpz env --machine "
if fish -c "source '$dir/ezpz.fish'; complete -C 'ezpz launch --n'" | cut -f1 | grep -qx -- --np; then
  echo "FAIL: fish offered the alias --np"
  fails=$((fails + 1))
fi
[ "$fails" -eq 0 ] || exit 1
echo "zsh and fish completion: all checks passed"
