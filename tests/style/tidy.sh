#!/usr/bin/env bash
# clang-tidy's bugprone-* and performance-* checks (.clang-tidy) on dtlab's C++ files, every
# finding an error. With no files: the .cpp files that the last 5 commits added or changed
# (at most 12; a header is checked through the files that include it). The whole tree takes
# about 40 minutes of one core here, more than CI can give it.
#
#   bash tests/style/tidy.sh                 # the files of the last commits
#   bash tests/style/tidy.sh labs/ddp/*.cpp  # these files
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v clang-tidy >/dev/null || { echo "tidy: clang-tidy is not installed (bash .ci/install-deps)" >&2; exit 1; }
build=build/tidy
# Its own configuration: one compile command per file (the release build compiles batches).
if [ ! -f "$build/compile_commands.json" ]; then
  cmake -S . -B "$build" -DDTL_UNITY_BUILD=OFF -DDTL_WITH_CUDA=OFF -DDTL_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git log -5 --name-only --diff-filter=AM --format= -- core kernels solutions labs viz exercises |
                       grep -E '\.cpp$' | grep -vE '^exercises/[a-z_]+\.cpp$' | sort -u | head -12)
fi
# Only files this configuration compiles (not the CUDA-only ones, not the learner's stubs),
# and not dtype.cpp, whose half types use GCC's _Float16, which clang 14 lacks on x86.
checked=()
for f in "${files[@]}"; do
  [ "$f" = core/comm/dtype.cpp ] && continue
  [ -f "$f" ] && grep -q "\"file\": \"$PWD/$f\"" "$build/compile_commands.json" && checked+=("$f")
done
if [ ${#checked[@]} -eq 0 ]; then
  echo "tidy: no C++ file of the last commits to check"
  exit 0
fi
echo "tidy: ${#checked[@]} file(s): ${checked[*]}"
printf '%s\n' "${checked[@]}" | xargs -P "${DTL_JOBS:-2}" -n 1 clang-tidy -p "$build" --quiet 2>/dev/null
echo "tidy: no finding in ${#checked[@]} file(s)"
