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
# The same, printing only a report's checks that failed, its verdict and the named rows.
lab_step() {
  local out; out=$(mktemp)
  "$@" >"$out" 2>&1; local code=$?
  grep -E "✗|result:|rror|device allocator|max weight diff|step time|speedup" "$out"
  [ "$code" -eq 0 ] || { echo "FAILED (exit $code): $*"; failures=$((failures + 1)); }
  rm -f "$out"
}

echo "== the collectives lab, 4 thread ranks sharing GPU 0, buffers in device memory, every algorithm"
step $dtlab run collectives --device cuda --ranks 4 --algo all --bytes 64M --iters 5

echo "== the threads backend's library all_reduce on device buffers, beside a device-to-device copy (the ceiling)"
step $dtlab bench all_reduce --device cuda --ranks 4 -b 1M -e 256M -f 4
step $dtlab bench all_reduce --device cuda --ranks 4 --impl ring -b 1M -e 256M -f 4

echo "== the NCCL backend, one process, a rank per GPU ($(nvidia-smi -L 2>/dev/null | wc -l) here): lab, then ncclAllReduce beside the copy ceiling"
step $dtlab run collectives --backend nccl --algo all --bytes 64M --iters 5 --trace "${OUT:-/tmp}/nccl_collectives.json"
step $dtlab bench all_reduce --backend nccl -b 1M -e 256M -f 4

echo "== every training lab with --device cuda on 1, 2 and 4 thread ranks sharing the GPU(s), then --backend nccl"
# A lab's arguments for R ranks (the grid needs dp·tp·pp = R; one pipeline stage has no interleaving).
lab_args() {
  local lab=$1 r=$2
  case $lab in
    ddp) echo "--variant all --precision fp32" ;;
    ddp-bf16) echo "--variant bucketed --precision bf16" ;;
    zero) echo "--stage all" ;;
    pipeline) if [ "$r" -ge 2 ]; then echo "--schedule all"; else echo "--schedule 1f1b"; fi ;;
    tp-mlp) echo "--model mlp --sequence-parallel both" ;;
    tp-gpt) echo "--model gpt --sequence-parallel both --layers 2 --hidden 64 --heads 4 --seq 32 --batch 4" ;;
    grid-mlp) case $r in 1) echo "--tp 1 --pp 1" ;; 2) echo "--tp 1 --pp 2" ;; *) echo "--tp 2 --pp 2" ;; esac ;;
    grid-gpt) case $r in 1) echo "--model gpt --tp 1 --pp 1" ;; 2) echo "--model gpt --tp 2 --pp 1" ;; *) echo "--model gpt --tp 2 --pp 2 --zero 1" ;; esac ;;
    gpt) echo "--steps 100" ;;
  esac
}
lab_name() { case $1 in ddp-bf16) echo ddp ;; tp-*) echo tensor_parallel ;; grid-*) echo grid ;; *) echo "$1" ;; esac; }
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
for lab in ddp ddp-bf16 zero pipeline tp-mlp tp-gpt grid-mlp grid-gpt gpt; do
  for r in 1 2 4; do
    echo "-- $lab, $r thread ranks, --device cuda"
    # shellcheck disable=SC2046
    lab_step $dtlab run "$(lab_name $lab)" --device cuda --ranks "$r" $(lab_args $lab "$r")
  done
  r=$gpus
  [ "$lab" = grid-mlp ] || [ "$lab" = grid-gpt ] && [ "$r" -ne 1 ] && [ "$r" -ne 2 ] && [ "$r" -ne 4 ] && continue
  echo "-- $lab, --backend nccl on $r GPU(s)"
  # shellcheck disable=SC2046
  lab_step $dtlab run "$(lab_name $lab)" --backend nccl --ranks "$r" $(lab_args $lab "$r")
done
echo "== activation recomputation on the GPU: the GPT's pooled activations against their formula, gradients against a twin keeping everything"
for mode in selective full; do
  echo "-- gpt --recompute $mode, 1 rank, --device cuda"
  lab_step $dtlab run gpt --device cuda --recompute "$mode" --steps 20
  echo "-- tensor_parallel --model gpt --recompute $mode, 2 thread ranks, --device cuda"
  lab_step $dtlab run tensor_parallel --device cuda --ranks 2 --model gpt --recompute "$mode" \
    --sequence-parallel on --layers 2 --hidden 64 --heads 4 --seq 32 --batch 4
done
echo "-- grid --model gpt --recompute full, dp 1 x tp 2 x pp 2, --device cuda"
lab_step $dtlab run grid --device cuda --ranks 4 --model gpt --tp 2 --pp 2 --recompute full
echo "-- the context-parallel lab is host-only: --device cuda is a usage error (exit 2)"
$dtlab run context_parallel --device cuda --ranks 2; code=$?
if [ "$code" -ne 2 ]; then echo "FAILED: expected exit 2, got $code"; failures=$((failures + 1)); fi
echo "-- NCCL refuses two ranks on one GPU: a usage error (exit 2) that says what to do"
$dtlab run ddp --backend nccl --ranks $((gpus + 1)); code=$?
if [ "$code" -ne 2 ]; then echo "FAILED: expected exit 2, got $code"; failures=$((failures + 1)); fi

echo "== the GPT on the GPU: its CUDA kernels against the CPU's, then one rank's forward+backward against the CPU model"
[ -n "${DTL_GPU_PREBUILT:-}" ] || step $bin/cuda_transformer_test  # (prebuilt: it ran with the test programs above)

echo "== the kernels on the GPU, beside cublasSgemm and a device-to-device copy measured in the same run"
step $dtlab bench-kernels --device cuda --batch 4096 --width 4096 --elements 256M

# dtlab's step and PyTorch eager's on the same model and sizes: both outputs, then the ratio.
compare_step() {
  local what=$1 script=$2; shift 2
  local dtlab_out torch_out
  dtlab_out=$(step $dtlab bench-step --device cuda "$@")
  echo "$dtlab_out"
  if ! python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    echo "PyTorch with CUDA is not installed here: no comparison"
    return
  fi
  torch_out=$(python3 "$script" "${@:3}")  # (the first two arguments are --model X)
  echo "$torch_out"
  awk -v d="$(awk '/^step_ms/ {print $2}' <<<"$dtlab_out")" -v t="$(awk '/^step_ms/ {print $2}' <<<"$torch_out")" \
      -v w="$what" 'BEGIN { printf "%s: dtlab step / PyTorch step = %.2f (below 1: dtlab is faster)\n", w, d / t }'
}
echo "== one rank's MLP training step: dtlab (CUDA kernels + cuBLAS) vs PyTorch eager, same model and sizes"
compare_step MLP tests/gpu/pytorch_mlp_step.py --model mlp --width 4096 --depth 8 --batch 4096 --steps 20
echo "== one rank's GPT training step (GPT-2 small's shape): dtlab vs PyTorch eager, same model and sizes"
compare_step GPT tests/gpu/pytorch_gpt_step.py --model gpt --layers 12 --hidden 768 --heads 12 --seq 512 --batch 8 \
  --vocab 32768 --steps 10

echo "steps failed: $failures"
[ "$failures" -eq 0 ]
