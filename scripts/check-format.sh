#!/usr/bin/env bash
# Fail when any C++ source is not clang-format clean (fix: clang-format -i FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(find src include tests -name '*.cpp' -o -name '*.hpp' | sort)
clang-format --dry-run --Werror "${files[@]}"
echo "clang-format: ${#files[@]} files clean"
