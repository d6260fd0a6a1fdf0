#!/usr/bin/env bash
# Regenerate completions/ from the CLI definition. A unit test fails when they drift.
# Usage: scripts/gen-completions.sh [path/to/ezpz]   (default: build/dev/ezpz)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/dev/ezpz}
"$bin" completions bash > completions/ezpz.bash
"$bin" completions zsh > completions/_ezpz
"$bin" completions fish > completions/ezpz.fish
echo "completions/ regenerated with $bin"
