#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: build with CUDA and run every `gpu`-labelled test, in
# one call (the `device` machine, or your own GPU box). Prints the GPU, each test's
# largest differences against its CPU reference, and ctest's summary.
#
#   bash tests/gpu/run.sh            # from the repository root
#   DTL_GPU_PREBUILT=DIR bash tests/gpu/run.sh
#       # a GPU machine without dtlab's Debian -dev packages: DIR holds dtlab, the gpu test
#       # programs and any shared library the machine lacks (bash tests/gpu/pack.sh makes it)
#
# CI has no GPU and never runs this; the release test preset excludes the label.
set -uo pipefail
cd "$(dirname "$0")/../.."
jobs=${DTL_JOBS:-$(nproc)}
gpu_tests=(cuda_kernels_test cuda_transformer_test cuda_device_ops_test cuda_model_test nccl_comm_test cuda_check_test)

if command -v nvidia-smi >/dev/null; then nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; fi
if [ -n "${DTL_GPU_PREBUILT:-}" ]; then
  bin=$DTL_GPU_PREBUILT
  dtlab=$bin/dtlab
  export LD_LIBRARY_PATH=$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  failures=0
  for t in "${gpu_tests[@]}"; do
    [ "$t" = cuda_check_test ] && continue  # it runs the others by their build paths
    echo "== $t"; "$bin/$t" || failures=$((failures + 1))
  done
  echo "gpu test programs failed: $failures"
else
  cmake --preset gpu >/dev/null
  cmake --build --preset gpu -j"$jobs" --target "${gpu_tests[@]}" dtlab
  ctest --preset gpu
  bin=build/gpu/tests
  dtlab=build/gpu/labs/cli/dtlab
fi


# Every step runs even when one before it failed; the script's status says whether any did.
failures=0
step() { "$@" || { echo "FAILED (exit $?): $*"; failures=$((failures + 1)); }; }

echo "== the collectives lab, 4 thread ranks sharing GPU 0, buffers in device memory, every algorithm"
step $dtlab run collectives --device cuda --ranks 4 --algo all --bytes 64M --iters 5

echo "== the threads backend's library all_reduce on device buffers, beside a device-to-device copy (the ceiling)"
step $dtlab bench all_reduce --device cuda --ranks 4 -b 1M -e 256M -f 4
step $dtlab bench all_reduce --device cuda --ranks 4 --impl ring -b 1M -e 256M -f 4

echo "== the NCCL backend, one process, a rank per GPU ($(nvidia-smi -L 2>/dev/null | wc -l) here): lab, then ncclAllReduce beside the copy ceiling"
step $dtlab run collectives --backend nccl --algo all --bytes 64M --iters 5 --trace "${OUT:-/tmp}/nccl_collectives.json"
step $dtlab bench all_reduce --backend nccl -b 1M -e 256M -f 4

echo "== the ZeRO lab, every stage, 2 thread ranks sharing GPU 0"
step $dtlab run zero --device cuda --ranks 2 --stage all

echo "== the GPT on the GPU: its CUDA kernels against the CPU's, then one rank's forward+backward against the CPU model"
echo "   (the tensor-parallel lab itself runs on the CPU only; it has no --device)"
step $bin/cuda_transformer_test

echo "== the kernels on the GPU, beside cublasSgemm and a device-to-device copy measured in the same run"
step $dtlab bench-kernels --device cuda --batch 4096 --width 4096 --elements 256M

echo "== one rank's MLP training step: dtlab (CUDA kernels + cuBLAS) vs PyTorch eager, same model and sizes"
size=(--width 4096 --depth 8 --batch 4096 --steps 20)
dtlab_out=$(step $dtlab bench-step --device cuda "${size[@]}")
echo "$dtlab_out"
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  torch_out=$(python3 tests/gpu/pytorch_mlp_step.py "${size[@]}")
  echo "$torch_out"
  awk -v d="$(awk '/^step_ms/ {print $2}' <<<"$dtlab_out")" -v t="$(awk '/^step_ms/ {print $2}' <<<"$torch_out")" \
    'BEGIN { printf "dtlab step / PyTorch step = %.2f (below 1: dtlab is faster)\n", d / t }'
else
  echo "PyTorch with CUDA is not installed here: no comparison"
fi

echo "steps failed: $failures"
[ "$failures" -eq 0 ]
