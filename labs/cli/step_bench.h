// `dtlab bench-step`: one rank's full training step of the lab MLP (forward, MSE, backward,
// AdamW) at a chosen size, timed, with the achieved GEMM rate next to the GEMM ceiling of
// the same device measured in the same run. The GPU version is compared with PyTorch
// eager by tests/gpu/pytorch_mlp_step.py (same model, loss, optimizer and sizes).
#pragma once

#include <string>

namespace dtl::cli {

struct StepBenchArgs {
  int width = 4096, depth = 8, batch = 4096, steps = 20, warmup = 3;
  std::string device = "cpu";
};

// Model FLOPs of one step: forward 2·params·batch, backward twice that (dX and dW).
double mlp_step_flops(int width, int depth, int batch, int in, int out);

int run_step_bench_cpu(const StepBenchArgs& a);
int run_step_bench_cuda(const StepBenchArgs& a);  // UsageError without a GPU

}  // namespace dtl::cli
