#!/usr/bin/env bash
# The one layout of dtlab's C++ (.clang-format): every tracked .h, .cpp, .cu and .cuh file.
#   bash tests/style/format.sh          # format them in place
#   bash tests/style/format.sh --check  # list the files that differ and exit 1 (CI)
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v clang-format >/dev/null || { echo "format: clang-format is not installed (bash .ci/install-deps)" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh')
if [ "${1:-}" = "--check" ]; then
  bad=()
  for f in "${files[@]}"; do
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if [ ${#bad[@]} -gt 0 ]; then
    printf 'format: %s differs from .clang-format\n' "${bad[@]}"
    echo "format: ${#bad[@]} of ${#files[@]} files; run: bash tests/style/format.sh" >&2
    exit 1
  fi
  echo "format: all ${#files[@]} C++ files as .clang-format lays them out"
else
  clang-format -i "${files[@]}"
  echo "format: ${#files[@]} C++ files formatted"
fi
