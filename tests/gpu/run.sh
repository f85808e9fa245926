#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: build with CUDA and run every `gpu`-labelled test, in
# one call (the `device` machine, or your own GPU box). Prints the GPU, each test's
# largest differences against its CPU reference, and ctest's summary.
#
#   bash tests/gpu/run.sh            # from the repository root
#
# CI has no GPU and never runs this; the release test preset excludes the label.
set -euo pipefail
cd "$(dirname "$0")/../.."
jobs=${DTL_JOBS:-$(nproc)}

if command -v nvidia-smi >/dev/null; then nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; fi
cmake --preset gpu >/dev/null
cmake --build --preset gpu -j"$jobs" --target cuda_kernels_test cuda_check_test dtlab
ctest --preset gpu

echo "== the kernels on the GPU, beside cublasSgemm and a device-to-device copy measured in the same run"
build/gpu/labs/cli/dtlab bench-kernels --device cuda --batch 4096 --width 4096 --elements 256M
