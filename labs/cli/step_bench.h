// `dtlab bench-step`: one rank's full training step of the lab MLP (forward, MSE, backward,
// AdamW) at a chosen size, timed, with the achieved GEMM rate; on a GPU next to the cuBLAS
// GEMM ceiling measured in the same run. CPU and GPU run the same Mlp and AdamW
// (labs/train), the GPU through cuBLAS and the CUDA kernels. The GPU number is compared
// with PyTorch eager by tests/gpu/pytorch_mlp_step.py (same model, loss, optimizer, sizes).
#pragma once

#include <optional>
#include <string>

namespace dtl::cli {

struct StepBenchArgs {
  // 0: the device's default size (cpu 1024 × 4 layers × 512 rows: a few seconds on one
  // core; cuda 4096 × 8 × 4096: big enough to keep an H100 busy).
  int width = 0, depth = 0, batch = 0;
  int steps = 20, warmup = 3;
  std::string device = "cpu";
};

// Model FLOPs of one step: forward 2·params·batch, backward twice that (dX and dW).
double mlp_step_flops(int width, int depth, int batch, int in, int out);

// The TFLOP/s of one hidden layer's forward GEMM, [B × W]·[W × W]ᵀ, alone on GPU 0
// (cublasSgemm, step_bench_cuda.cpp). UsageError in a build without CUDA.
double cublas_gemm_tflops(int batch, int width);

}  // namespace dtl::cli
