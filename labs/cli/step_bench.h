// `dtlab bench-step`: one rank's full training step of the lab MLP (forward, MSE, backward,
// AdamW) at a chosen size, timed, with the achieved GEMM rate; on a GPU next to the cuBLAS
// GEMM ceiling measured in the same run. CPU and GPU run the same Mlp and AdamW
// (labs/train), the GPU through cuBLAS and the CUDA kernels. The GPU number is compared
// with PyTorch eager by tests/gpu/pytorch_mlp_step.py (same model, loss, optimizer, sizes).
#pragma once

#include <optional>
#include <string>

namespace dtl::cli {

enum class StepModel { mlp, gpt };

struct StepBenchArgs {
  StepModel model = StepModel::mlp;
  // The MLP; 0: the device's default size (cpu 1024 × 4 layers × 512 rows: a few seconds
  // on one core; cuda 4096 × 8 × 4096: big enough to keep an H100 busy).
  int width = 0, depth = 0, batch = 0;
  // The GPT (labs/train/gpt.h), one rank: batch sequences of seq tokens; 0: the device's
  // default (cpu 2 layers × 128 wide, 4 × 64 tokens; cuda GPT-2 small's 12 × 768, 12 heads,
  // 8 × 512 tokens, a 32768-entry vocabulary).
  int layers = 0, hidden = 0, heads = 0, seq = 0, vocab = 0;
  int steps = 20, warmup = 3;
  std::string device = "cpu";
};

// One GPT training step (forward, cross-entropy, backward, AdamW) of the lab's Gpt on
// `device`, timed: prints step_ms and achieved_TFLOPs (step_bench_gpt.cpp).
int run_gpt_step_bench(const StepBenchArgs& a, bool gpu);

// Model FLOPs of one step: forward 2·params·batch, backward twice that (dX and dW).
double mlp_step_flops(int width, int depth, int batch, int in, int out);

// The TFLOP/s of one hidden layer's forward GEMM, [B × W]·[W × W]ᵀ, alone on GPU 0
// (cublasSgemm, step_bench_cuda.cpp). UsageError in a build without CUDA.
double cublas_gemm_tflops(int batch, int width);

}  // namespace dtl::cli
