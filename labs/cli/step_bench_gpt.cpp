// `dtlab bench-step --model gpt`: one rank's training step of the lab's GPT (labs/train/gpt.h)
// with AdamW, timed on the wall clock (each step reads its loss back, so a GPU step has
// finished when the clock stops). tests/gpu/pytorch_gpt_step.py is the same model in
// PyTorch eager, for the ratio tests/gpu/run.sh prints.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <vector>

#include "core/comm/threads_backend.h"
#include "core/error.h"
#include "core/util/units.h"
#include "kernels/cpu/cpu_threads.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cuda/device.h"
#include "labs/cli/step_bench.h"
#include "labs/cli/validators.h"
#include "labs/train/data.h"
#include "labs/train/gpt.h"
#include "labs/train/op_profile.h"
#include "labs/train/optimizer.h"

namespace dtl::cli {

namespace {

// Model FLOPs of one step (Kaplan et al. 2020's 6N per token for the weights, the tied
// head included, plus attention's 12·L·h·S per token for QKᵀ and P·V forward and backward).
double gpt_step_flops(const GptConfig& c) {
  const double h = c.hidden, L = c.layers, weights = L * 12 * h * h + double(c.vocab) * h;
  return (6 * weights + 12 * L * h * c.seq) * c.rows();
}

GptConfig config_of(StepBenchArgs a, bool gpu) {
  const auto pick = [gpu](int v, int cpu_default, int gpu_default) { return v ? v : gpu ? gpu_default : cpu_default; };
  GptConfig c;
  c.layers = pick(a.layers, 2, 12);
  c.hidden = pick(a.hidden, 128, 768);
  c.heads = pick(a.heads, 4, 12);
  c.seq = pick(a.seq, 64, 512);
  c.batch = pick(a.batch, 4, 8);
  c.vocab = pick(a.vocab, 256, 32768);
  const std::string problem = gpt_config_problem(c, 1, ex::TpMode::plain);
  if (!problem.empty()) throw UsageError("bench-step --model gpt: " + problem);
  return c;
}

}  // namespace

int run_gpt_step_bench(const StepBenchArgs& a, bool gpu) {
  kernels::use_cpu_threads(a.threads);
  const GptConfig c = config_of(a, gpu);
  // Weights, gradients, AdamW's m and v (16 B/param) and the activations, before allocating.
  if (!gpu)
    require_memory(16 * gpt_approx_params(c) + gpt_activation_bytes(c, 1, ex::TpMode::plain),
                   "--layers, --hidden, --seq, --batch or --vocab");
  if (gpu) cuda::use_cuda_memory();  // no GPU or no CUDA build: says so, exit 2
  const Device device = gpu ? Device::cuda(0) : Device::cpu();
  StepTimes times;
  std::size_t num_params = 0;
  float last_loss = 0;
  ThreadsOptions one;
  one.world_size = 1;
  one.timeout_s = 0;  // a rank alone never waits on a peer: no watchdog
  OpProfile profile;
  const RunResult r = run_threads(one, [&](Comm& comm) {  // the model needs a (one-rank) group
    std::optional<ScopedOpProfile> profiling;             // before the model: it keeps the ops it is built with
    if (a.profile_ops) profiling.emplace(profile);
    MemoryTracker mem(0, nullptr);
    Gpt model(c, ex::TpGroup{comm, ex::TpMode::plain}, mem, 7, device);
    AdamW opt(model.whole_params(), device, mem, kernels::AdamWConfig{});
    std::vector<int> tokens, targets;
    counting_batch(0, c.seq, c.batch, c.vocab, tokens, targets);
    auto step = [&] {
      last_loss = model.forward_backward(tokens.data(), targets.data());
      opt.step(model.whole_params());  // returns when the device is done
    };
    for (int i = 0; i < a.warmup; ++i) step();
    profile.reset();  // the timed steps only
    times = time_steps(a.steps, step);
    num_params = model.num_params();
  });
  if (!r.ok()) {
    if (r.first_failure) std::rethrow_exception(r.first_failure);
    throw Error(r.error);
  }
  if (!gpu) std::printf("blas %s\n", kernels::blas_kernels().c_str());
  std::printf("device %s  gpt layers %d  hidden %d  heads %d  seq %d  batch %d  vocab %d  params %zu  loss %.4f\n",
              gpu ? device.name().c_str() : "cpu", c.layers, c.hidden, c.heads, c.seq, c.batch, c.vocab, num_params,
              double(last_loss));
  print_step_times(times, gpt_step_flops(c) / times.median_s * 1e-12);
  if (a.profile_ops) print_op_profile(profile, a.steps, times.mean_s, c.rows(), c.hidden);
  return 0;
}

}  // namespace dtl::cli
