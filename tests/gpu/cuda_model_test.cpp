// Label gpu: the training substrate's one model on a GPU. The same Mlp and AdamW run on the
// CPU (OpenBLAS) and on CUDA (cuBLAS + the CUDA kernels, TrainOps); outputs, gradients,
// the first layer's dX and the weights after a few steps must agree within the
// summation-order error of two GEMM libraries, in fp32 and in bf16 mixed precision.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/memory/device_ops.h"
#include "kernels/cuda/device.h"
#include "labs/train/data.h"
#include "labs/train/mlp.h"
#include "labs/train/optimizer.h"
#include "tests/gpu/skip_without_gpu.h"

using namespace dtl;

namespace {

// max |a - b| / max |a| over n fp32 values, both read back to the host.
double relative_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0, scale = 1e-30;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::fabs(double(a[i])));
  }
  return worst / scale;
}

std::vector<float> floats(const void* p, DType t, std::size_t n) {
  std::vector<float> out(n);
  copy_to_host_floats(p, t, out);
  return out;
}

struct TrainedModel {
  std::vector<float> output, input_grad, grads, weights;
};

// Three AdamW steps on one device; what the model held after each part.
TrainedModel train(Device device, DType precision) {
  MemoryTracker mem(0, nullptr);
  const MlpShape shape{64, 256, 32, 4};
  const int B = 128;
  Mlp model(shape, mem, 1, precision, device);
  AdamW opt(whole_model(model), device, mem, {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f});
  const Dataset data = make_teacher_data(shape, B, 5);
  Tensor x(mem, {B, shape.in}, DType::f32, MemTag::activation, device);
  Tensor target(mem, {B, shape.out}, DType::f32, MemTag::activation, device);
  Tensor dy(mem, {B, shape.out}, DType::f32, MemTag::activation, device);
  copy_bytes(x.data(), data.x.data(), x.bytes());
  copy_bytes(target.data(), data.y.data(), target.bytes());
  TrainedModel r;
  for (int step = 0; step < 3; ++step) {
    const float* y = model.forward(x.as<float>(), B);
    model.ops().mse_loss(y, target.as<float>(), dy.as<float>(), dy.numel());
    const float* dx = model.backward(dy.as<float>(), false, {}, /*input_grad=*/true);
    if (step == 0) {
      r.output = floats(y, DType::f32, std::size_t(B) * shape.out);
      r.input_grad = floats(dx, DType::f32, std::size_t(B) * shape.in);
      r.grads = floats(model.grad_data(), precision, model.num_params());
    }
    EXPECT_TRUE(opt.step(whole_model(model)));
  }
  r.weights = opt.master() ? floats(opt.master(), DType::f32, model.num_params())
                           : floats(model.param_data(), precision, model.num_params());
  return r;
}

}  // namespace

TEST(CudaModel, TheOneModelMatchesTheCpuInFp32AndBf16) {
  DTL_SKIP_WITHOUT_GPU();
  cuda::use_cuda_memory();
  for (DType t : {DType::f32, DType::bf16}) {
    const TrainedModel cpu = train(Device::cpu(), t), gpu = train(Device::cuda(0), t);
    // fp32: two GEMM libraries sum in different orders (~1e-6); bf16 rounds the gradients
    // to 8 significant bits, so one ulp (2^-8) of difference is expected there.
    const double tol = t == DType::f32 ? 1e-4 : 1.0 / 64;
    const double out = relative_diff(cpu.output, gpu.output), dx = relative_diff(cpu.input_grad, gpu.input_grad);
    const double g = relative_diff(cpu.grads, gpu.grads), w = relative_diff(cpu.weights, gpu.weights);
    std::printf("%s: output %.2e  dX %.2e  grads %.2e  weights after 3 AdamW steps %.2e (relative)\n",
                std::string(dtype_name(t)).c_str(), out, dx, g, w);
    EXPECT_LT(out, tol);
    EXPECT_LT(dx, tol);
    EXPECT_LT(g, tol);
    EXPECT_LT(w, tol);
  }
}
