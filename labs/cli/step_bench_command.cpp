// `dtlab bench-step`: see step_bench.h. The CPU run uses the lab's own Mlp and AdamW.
#include <chrono>
#include <cstdio>

#include "core/error.h"
#include "core/util/units.h"
#include "kernels/cpu/kernels.h"
#include "labs/cli/commands.h"
#include "labs/cli/step_bench.h"
#include "labs/model.h"
#include "labs/optimizer.h"

namespace dtl::cli {

double mlp_step_flops(int width, int depth, int batch, int in, int out) {
  double params = 0;
  for (int l = 0; l < depth; ++l) {
    const double i = l == 0 ? in : width, o = l == depth - 1 ? out : width;
    params += i * o;  // multiply-adds per row; biases and GELU are noise next to them
  }
  return 6.0 * params * batch;
}

int run_step_bench_cpu(const StepBenchArgs& a) {
  kernels::use_one_blas_thread();
  MlpShape shape;
  shape.width = a.width;
  shape.layers = a.depth;
  MemoryTracker mem(0, nullptr);
  Mlp model(shape, mem, 1);
  AdamW opt(model, mem, kernels::AdamWConfig{});
  const Dataset data = make_teacher_data(shape, a.batch, 7);
  std::vector<float> dy(std::size_t(a.batch) * std::size_t(shape.out));
  auto step = [&] {
    const float* y = model.forward(data.x_row(0), a.batch);
    kernels::mse_loss(y, data.y_row(0), dy.data(), dy.size());
    model.backward(dy.data(), false);
    opt.step();
  };
  for (int i = 0; i < a.warmup; ++i) step();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < a.steps; ++i) step();
  const double step_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / a.steps;
  const double flops = mlp_step_flops(a.width, a.depth, a.batch, shape.in, shape.out);
  std::printf("device cpu (one core)  width %d  depth %d  batch %d  params %zu\n", a.width, a.depth, a.batch, model.num_params());
  std::printf("step_ms %.3f\nachieved_TFLOPs %.4f\n", step_s * 1e3, flops / step_s * 1e-12);
  return 0;
}

Command add_step_bench_command(CLI::App& app) {
  auto a = std::make_shared<StepBenchArgs>();
  CLI::App* b = app.add_subcommand("bench-step", "Time one rank's training step of the MLP (cpu, or cuda vs PyTorch)");
  b->add_option("--width", a->width, "Hidden width")->capture_default_str();
  b->add_option("--depth", a->depth, "Linear layers")->capture_default_str();
  b->add_option("--batch", a->batch, "Rows per step")->capture_default_str();
  b->add_option("--steps", a->steps, "Timed steps")->capture_default_str();
  b->add_option("--warmup", a->warmup, "Untimed steps first")->capture_default_str();
  b->add_option("--device", a->device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  return [a] {
    if (a->width < 1 || a->depth < 1 || a->batch < 1 || a->steps < 1 || a->warmup < 0)
      throw UsageError("--width, --depth, --batch and --steps must be positive, --warmup at least 0");
    if (a->device == "cpu")  // 16 bytes per parameter, and two activations per layer and row
      require_memory(16.0 * double(a->width) * a->width * a->depth + 8.0 * a->depth * double(a->batch) * a->width,
                     "--width, --depth or --batch");
    return a->device == "cuda" ? run_step_bench_cuda(*a) : run_step_bench_cpu(*a);
  };
}

}  // namespace dtl::cli
