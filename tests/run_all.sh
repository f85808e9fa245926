#!/usr/bin/env bash
# Builds and runs every test that this machine can run (README command 2; .ci/run).
#   1. release build, solutions track: dtlab, dtlab-viz and every test — unit, graded, viz
#      (screenshots under Xvfb), mpi (mpirun -np 2 and 4, srun on a one-node Slurm
#      cluster), slow
#   2. a 10 s libFuzzer run (ASan + UBSan) of the visualizer's trace parser
#   3. ThreadSanitizer build of the runtime's tests (label `sanitized`: tests/CMakeLists.txt's
#      DTL_SANITIZED_TESTS, the one list of them)
#   4. AddressSanitizer + UndefinedBehaviorSanitizer build of the same tests
#   5. exercise track (build/release/student/dtlab, the stubs linked in): the grader gives
#      0 points with every stub's hint at levels 1, 2 and 3, its output holds no line of
#      solutions/*.cpp, and every lab passes on the stubs with the references
#   6. the format of every C++ file (clang-format --dry-run --Werror, .clang-format)
# Prints ctest's summary and the seconds of each stage; exits non-zero if anything fails.
# CI runs it on 2 cores within 30 minutes: a stage that grows needs a saving beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${DTL_JOBS:-2}
# CI (CI=true) builds with warnings as errors; a learner's build does not.
werror=OFF
[ -n "${CI:-}" ] && werror=ON

stage_start=$SECONDS
stage_done() { echo "-- $1: $((SECONDS - stage_start)) s"; stage_start=$SECONDS; }

echo "== release build (solutions track): every tool and test"
cmake --preset release -DDTL_WERROR=$werror >/dev/null
cmake --build --preset release -j"$jobs" --target ci_release_tests
stage_done "release build"
ctest --preset release
stage_done "release tests"

echo "== fuzzing the trace parser (10 s)"
bash tests/viz/fuzz.sh 10
stage_done "fuzzing"

echo "== ThreadSanitizer build of the runtime tests"
cmake --preset tsan -DDTL_WERROR=$werror >/dev/null
cmake --build --preset tsan -j"$jobs" --target ci_sanitized_tests
ctest --preset tsan
stage_done "ThreadSanitizer"

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build of the runtime tests"
cmake --preset asan -DDTL_WERROR=$werror >/dev/null
cmake --build --preset asan -j"$jobs" --target ci_sanitized_tests
ctest --preset asan
stage_done "AddressSanitizer"

echo "== exercise track: the stubs grade 0 points, every stub's failure comes with its hint, every lab runs on them"
# build/release/student/dtlab (target dtlab-exercise-track) is the release build's dtlab
# with exercises/*.cpp linked in place of the solutions (exercises/CMakeLists.txt):
# what a learner's `cmake --build --preset student` links. check_student_grader.sh: 0
# points, a stub message and hint N per exercise at levels 1, 2 and 3, no GoogleTest
# internals, no line of solutions/*.cpp; each lab passes, running the references.
bash tests/grade/check_student_grader.sh build/release/student/dtlab
echo "exercise track: 0 points, every stub explains itself, every lab runs on the stubs"
stage_done "exercise track"

echo "== style: every C++ file formatted (.clang-format), clang-tidy on the last commits' files (.clang-tidy)"
bash tests/style/format.sh --check
bash tests/style/tidy.sh
stage_done "style"
