// `dtlab bench-step`: see step_bench.h. CPU and GPU run the lab's own Mlp and AdamW.
#include <chrono>
#include <cstdio>
#include <map>
#include <vector>

#include "core/error.h"
#include "core/memory/device_ops.h"
#include "core/util/units.h"
#include "kernels/cpu/cpu_threads.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cuda/device.h"
#include "labs/cli/commands.h"
#include "labs/cli/step_bench.h"
#include "labs/cli/validators.h"
#include "labs/train/data.h"
#include "labs/train/mlp.h"
#include "labs/train/optimizer.h"

namespace dtl::cli {

double mlp_step_flops(int width, int depth, int batch, int in, int out) {
  double params = 0;
  for (int l = 0; l < depth; ++l) {
    const double i = l == 0 ? in : width, o = l == depth - 1 ? out : width;
    params += i * o;  // multiply-adds per row; biases and GELU are noise next to them
  }
  return 6.0 * params * batch;
}

namespace {

// One training step of the lab's Mlp and AdamW on `device`, timed on the wall clock (each
// step reads its loss back, so a GPU step has finished when the clock stops).
int run_step_bench(const StepBenchArgs& a, Device device) {
  kernels::use_cpu_threads(a.threads);
  MlpShape shape;
  shape.width = a.width;
  shape.layers = a.depth;
  MemoryTracker mem(0, nullptr);
  Mlp model(shape, mem, 1, DType::f32, device);
  AdamW opt(whole_model(model), device, mem, kernels::AdamWConfig{});
  const Dataset data = make_teacher_data(shape, a.batch, 7);  // on the host; uploaded once
  Tensor x(mem, {a.batch, shape.in}, DType::f32, MemTag::activation, device);
  Tensor target(mem, {a.batch, shape.out}, DType::f32, MemTag::activation, device);
  Tensor dy(mem, {a.batch, shape.out}, DType::f32, MemTag::activation, device);
  copy_bytes(x.data(), data.x.data(), x.bytes());
  copy_bytes(target.data(), data.y.data(), target.bytes());
  TrainOps& ops = model.ops();
  auto step = [&] {
    const float* y = model.forward(x.as<float>(), a.batch);
    ops.mse_loss(y, target.as<float>(), dy.as<float>(), dy.numel());
    model.backward(dy.as<float>(), false);
    opt.step(whole_model(model));
  };
  for (int i = 0; i < a.warmup; ++i) step();
  const StepTimes t = time_steps(a.steps, step);
  const double tflops = mlp_step_flops(a.width, a.depth, a.batch, shape.in, shape.out) / t.median_s * 1e-12;
  if (device.kind == Device::Kind::cpu) std::printf("blas %s\n", kernels::blas_kernels().c_str());
  std::printf("device %s  width %d  depth %d  batch %d  params %zu\n",
              device.kind == Device::Kind::cpu ? "cpu" : device.name().c_str(), a.width, a.depth, a.batch,
              model.num_params());
  print_step_times(t, tflops);
  if (device.kind == Device::Kind::cuda) {
    const double gemm = cublas_gemm_tflops(a.batch, a.width);
    std::printf("cublas_sgemm_TFLOPs %.2f\nfraction_of_gemm %.2f\n", gemm, tflops / gemm);
  }
  return 0;
}

}  // namespace

Command add_step_bench_command(CLI::App& app) {
  auto a = std::make_shared<StepBenchArgs>();
  CLI::App* b =
      app.add_subcommand("bench-step", "Time one rank's training step of the MLP or the GPT (cpu, or cuda vs PyTorch)");
  b->add_option("--width", a->width, "Hidden width (default: cpu 1024, cuda 4096)")->check(whole_range(1, 1 << 16));
  b->add_option("--depth", a->depth, "Linear layers (default: cpu 4, cuda 8)")->check(whole_range(1, 1024));
  b->add_option("--batch", a->batch, "Rows per step (default: cpu 512, cuda 4096)")->check(whole_range(1, 1 << 24));
  b->add_option("--steps", a->steps, "Timed steps")->check(whole_range(1, 1000000))->capture_default_str();
  b->add_option("--warmup", a->warmup, "Untimed steps first")->check(whole_range(0, 1000000))->capture_default_str();
  b->add_option("--device", a->device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  const std::map<std::string, StepModel> models{{"mlp", StepModel::mlp}, {"gpt", StepModel::gpt}};
  b->add_option("--model", a->model, "mlp (the labs' MLP), or gpt (the tiny GPT's code at GPT-2 small's size on cuda)")
      ->transform(CLI::CheckedTransformer(models, CLI::ignore_case));
  b->add_option("--layers", a->layers, "GPT: transformer layers")->check(whole_range(1, 1024));
  b->add_option("--hidden", a->hidden, "GPT: hidden size")->check(whole_range(1, 1 << 16));
  b->add_option("--heads", a->heads, "GPT: attention heads")->check(whole_range(1, 1024));
  b->add_option("--seq", a->seq, "GPT: tokens per sequence")->check(whole_range(1, 1 << 16));
  b->add_option("--vocab", a->vocab, "GPT: vocabulary entries")->check(whole_range(1, 1 << 20));
  b->add_option("--threads", a->threads, "CPU: a pool of threads for dtlab's kernels (OpenBLAS at one inside each)")
      ->check(whole_range(1, 256))
      ->capture_default_str();
  b->add_flag("--profile-ops", a->profile_ops, "GPT on the CPU: each op's time, share and rate against the ceilings");
  return [a, b] {
    const bool gpu = a->device == "cuda";
    if (gpu && b->count("--threads") > 0)
      throw UsageError("--threads sets the CPU's threads; drop it with --device cuda");
    if (a->profile_ops && (gpu || a->model != StepModel::gpt))
      throw UsageError("--profile-ops times the GPT's CPU ops: use it with --model gpt --device cpu");
    // An option of the other model would have no effect: refuse it.
    const std::vector<std::string> mlp_only = {"--width", "--depth"};
    const std::vector<std::string> gpt_only = {"--layers", "--hidden", "--heads", "--seq", "--vocab"};
    for (const std::string& o : a->model == StepModel::gpt ? mlp_only : gpt_only)
      if (b->count(o) > 0)
        throw UsageError(o + " belongs to --model " + (a->model == StepModel::gpt ? "mlp" : "gpt") +
                         "; drop it or change --model");
    if (a->model == StepModel::gpt) return run_gpt_step_bench(*a, gpu);
    if (a->width == 0) a->width = gpu ? 4096 : 1024;
    if (a->depth == 0) a->depth = gpu ? 8 : 4;
    if (a->batch == 0) a->batch = gpu ? 4096 : 512;
    if (!gpu)  // 16 bytes per parameter, and two activations per layer and row
      require_memory(16.0 * double(a->width) * a->width * a->depth + 8.0 * a->depth * double(a->batch) * a->width,
                     "--width, --depth or --batch");
    if (gpu) cuda::use_cuda_memory();  // no GPU or no CUDA build: says so, exit 2
    return run_step_bench(*a, gpu ? Device::cuda(0) : Device::cpu());
  };
}

}  // namespace dtl::cli
