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
cmake --build --preset gpu -j"$jobs" --target cuda_kernels_test cuda_transformer_test cuda_device_ops_test cuda_model_test nccl_comm_test cuda_check_test dtlab
ctest --preset gpu

echo "== the collectives lab, 4 thread ranks sharing GPU 0, buffers in device memory, every algorithm"
build/gpu/labs/cli/dtlab run collectives --device cuda --ranks 4 --algo all --bytes 64M --iters 5

echo "== the threads backend's library all_reduce on device buffers, beside a device-to-device copy (the ceiling)"
build/gpu/labs/cli/dtlab bench all_reduce --device cuda --ranks 4 -b 1M -e 256M -f 4
build/gpu/labs/cli/dtlab bench all_reduce --device cuda --ranks 4 --impl ring -b 1M -e 256M -f 4

echo "== the NCCL backend, one process, a rank per GPU ($(nvidia-smi -L 2>/dev/null | wc -l) here): lab, then ncclAllReduce beside the copy ceiling"
build/gpu/labs/cli/dtlab run collectives --backend nccl --algo all --bytes 64M --iters 5 --trace "${OUT:-/tmp}/nccl_collectives.json"
build/gpu/labs/cli/dtlab bench all_reduce --backend nccl -b 1M -e 256M -f 4

echo "== the GPT on the GPU: its CUDA kernels against the CPU's, then one rank's forward+backward against the CPU model"
echo "   (the tensor-parallel lab itself runs on the CPU only; it has no --device)"
build/gpu/tests/cuda_transformer_test

echo "== the kernels on the GPU, beside cublasSgemm and a device-to-device copy measured in the same run"
build/gpu/labs/cli/dtlab bench-kernels --device cuda --batch 4096 --width 4096 --elements 256M

echo "== one rank's MLP training step: dtlab (CUDA kernels + cuBLAS) vs PyTorch eager, same model and sizes"
size=(--width 4096 --depth 8 --batch 4096 --steps 20)
dtlab_out=$(build/gpu/labs/cli/dtlab bench-step --device cuda "${size[@]}")
echo "$dtlab_out"
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  torch_out=$(python3 tests/gpu/pytorch_mlp_step.py "${size[@]}")
  echo "$torch_out"
  awk -v d="$(awk '/^step_ms/ {print $2}' <<<"$dtlab_out")" -v t="$(awk '/^step_ms/ {print $2}' <<<"$torch_out")" \
    'BEGIN { printf "dtlab step / PyTorch step = %.2f (below 1: dtlab is faster)\n", d / t }'
else
  echo "PyTorch with CUDA is not installed here: no comparison"
fi
