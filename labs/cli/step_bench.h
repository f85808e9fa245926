// `dtlab bench-step`: one rank's full training step of the lab MLP (forward, MSE, backward,
// AdamW) at a chosen size, timed, with the achieved GEMM rate; on a GPU next to the cuBLAS
// GEMM ceiling measured in the same run. CPU and GPU run the same Mlp and AdamW
// (labs/train), the GPU through cuBLAS and the CUDA kernels. The GPU number is compared
// with PyTorch eager by tests/gpu/pytorch_mlp_step.py (same model, loss, optimizer, sizes).
#pragma once

#include <functional>
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
  int threads = 1;           // --threads: CPU threads, OpenBLAS and dtlab's own kernels (cpu_threads.h)
  bool profile_ops = false;  // --profile-ops (GPT on the CPU): each op's share of the step
};

}  // namespace dtl::cli
namespace dtl {
struct OpProfile;  // labs/train/op_profile.h
}  // namespace dtl
namespace dtl::cli {

// The per-op table of a profiled GPT step (step_bench_ops.cpp): each op's calls and time per
// step, its share, and its rate against the ceilings measured now (cblas_sgemm at the
// model's MLP shape for the GEMM ops, the memory bandwidth of a copy larger than the caches
// for the others). `rows` tokens per step, `hidden` wide.
void print_op_profile(const OpProfile& profile, int steps, double step_s, int rows, int hidden);

// The timed steps of a bench: their median (what step_ms prints) and spread.
struct StepTimes {
  double median_s = 0, min_s = 0, max_s = 0, mean_s = 0;
};
StepTimes time_steps(int steps, const std::function<void()>& step);
// step_ms (the median), step_spread_ms (min max), achieved_TFLOPs.
void print_step_times(const StepTimes& t, double tflops);

// One GPT training step (forward, cross-entropy, backward, AdamW) of the lab's Gpt on
// `device`, timed: prints step_ms and achieved_TFLOPs (step_bench_gpt.cpp).
int run_gpt_step_bench(const StepBenchArgs& a, bool gpu);

// Model FLOPs of one step: forward 2·params·batch, backward twice that (dX and dW).
double mlp_step_flops(int width, int depth, int batch, int in, int out);

// The TFLOP/s of one hidden layer's forward GEMM, [B × W]·[W × W]ᵀ, alone on GPU 0
// (cublasSgemm, step_bench_cuda.cpp). UsageError in a build without CUDA.
double cublas_gemm_tflops(int batch, int width);

}  // namespace dtl::cli
