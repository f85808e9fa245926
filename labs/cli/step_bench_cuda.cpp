// `dtlab bench-step --device cuda`: the lab MLP's training step on GPU 0 with the CUDA
// kernels and cuBLAS, in the lab's layout (parameters and gradients each one buffer,
// AdamW over the flat buffer in one kernel), timed with CUDA events, next to cublasSgemm
// of one hidden layer's shape measured in the same run.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/session.h"
#include "labs/cli/step_bench.h"

namespace dtl::cli {

namespace {

float* device_floats(std::size_t n) {
  float* p = nullptr;
  DTL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(float)));
  DTL_CUDA_CHECK(cudaMemset(p, 0, n * sizeof(float)));
  return p;
}

void upload(float* dst, const std::vector<float>& src) {
  DTL_CUDA_CHECK(cudaMemcpy(dst, src.data(), src.size() * sizeof(float), cudaMemcpyHostToDevice));
}

struct Layer {
  int in = 0, out = 0;
  std::size_t w = 0, b = 0;  // offsets into params/grads
  float *pre = nullptr, *post = nullptr;
};

}  // namespace

int run_step_bench_cuda(const StepBenchArgs& a) {
  cuda::GpuSession gpu(0);
  cudaStream_t s = gpu.stream();
  cublasHandle_t blas = gpu.blas();
  cuda::EventTimer timer(s);

  const int B = a.batch, in = 64, out = 64;  // the lab's MlpShape in/out
  std::vector<Layer> layers(static_cast<std::size_t>(a.depth));
  std::size_t n = 0;
  int widest = in;
  for (int l = 0; l < a.depth; ++l) {
    Layer& L = layers[std::size_t(l)];
    L.in = l == 0 ? in : a.width;
    L.out = l == a.depth - 1 ? out : a.width;
    L.w = n;
    L.b = n + std::size_t(L.in) * std::size_t(L.out);
    n = L.b + std::size_t(L.out);
    widest = std::max(widest, L.out);
    L.pre = device_floats(std::size_t(B) * std::size_t(L.out));
    if (l + 1 < a.depth) L.post = device_floats(std::size_t(B) * std::size_t(L.out));
  }
  float *params = device_floats(n), *grads = device_floats(n), *m = device_floats(n), *v = device_floats(n);
  float *x = device_floats(std::size_t(B) * in), *target = device_floats(std::size_t(B) * out), *dy = device_floats(std::size_t(B) * out);
  float *d_a = device_floats(std::size_t(B) * std::size_t(widest)), *d_b = device_floats(std::size_t(B) * std::size_t(widest));
  {  // nn.Linear's init and N(0, 1) data, made on the host once
    std::mt19937 rng(1);
    std::vector<float> host(n);
    for (const Layer& L : layers) {
      std::uniform_real_distribution<float> d(-1.0f / std::sqrt(float(L.in)), 1.0f / std::sqrt(float(L.in)));
      for (std::size_t i = L.w; i < L.b + std::size_t(L.out); ++i) host[i] = d(rng);
    }
    upload(params, host);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> xs(std::size_t(B) * in), ts(std::size_t(B) * out);
    for (auto& e : xs) e = nd(rng);
    for (auto& e : ts) e = nd(rng);
    upload(x, xs);
    upload(target, ts);
  }
  const kernels::AdamWConfig adam{};
  int t = 0;
  auto step = [&] {
    const float* h = x;  // forward
    for (std::size_t l = 0; l < layers.size(); ++l) {
      const Layer& L = layers[l];
      cuda::linear_forward(blas, h, params + L.w, params + L.b, L.pre, B, L.in, L.out, s);
      if (L.post) {
        cuda::gelu_forward(L.pre, L.post, std::size_t(B) * std::size_t(L.out), s);
        h = L.post;
      }
    }
    cuda::mse_loss(layers.back().pre, target, dy, std::size_t(B) * out, s);  // reads the loss back: one sync per step
    float *d_out = d_a, *d_in = d_b;  // backward
    DTL_CUDA_CHECK(cudaMemcpyAsync(d_out, dy, std::size_t(B) * out * sizeof(float), cudaMemcpyDeviceToDevice, s));
    for (int l = a.depth - 1; l >= 0; --l) {
      const Layer& L = layers[std::size_t(l)];
      const float* layer_input = l == 0 ? x : layers[std::size_t(l - 1)].post;
      cuda::linear_backward(blas, layer_input, params + L.w, d_out, l == 0 ? nullptr : d_in, grads + L.w, grads + L.b, B, L.in,
                            L.out, false, s);
      if (l > 0) cuda::gelu_backward(layers[std::size_t(l - 1)].pre, d_in, d_out, std::size_t(B) * std::size_t(L.in), s);
    }
    cuda::adamw_step(params, grads, m, v, n, adam, ++t, s);
  };

  for (int i = 0; i < a.warmup; ++i) step();
  const double step_s = timer.mean_seconds(a.steps, step);
  // The ceiling: a hidden layer's forward GEMM, [B × W]·[W × W]ᵀ, alone, on buffers of its own.
  const int W = a.width;
  float *ga = device_floats(std::size_t(B) * std::size_t(W)), *gw = device_floats(std::size_t(W) * std::size_t(W)),
        *gc = device_floats(std::size_t(B) * std::size_t(W));
  const float one = 1.0f, zero = 0.0f;
  auto gemm = [&] { DTL_CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, W, B, W, &one, gw, W, ga, W, &zero, gc, W)); };
  gemm();
  const double gemm_tflops = 2.0 * B * double(W) * W / timer.mean_seconds(10, gemm) * 1e-12;
  const double flops = mlp_step_flops(a.width, a.depth, B, in, out);
  std::printf("device %s  width %d  depth %d  batch %d  params %zu\n", gpu.device_name(), a.width, a.depth, B, n);
  std::printf("step_ms %.3f\nachieved_TFLOPs %.2f\ncublas_sgemm_TFLOPs %.2f\nfraction_of_gemm %.2f\n", step_s * 1e3,
              flops / step_s * 1e-12, gemm_tflops, flops / step_s * 1e-12 / gemm_tflops);

  for (Layer& L : layers) {
    DTL_CUDA_CHECK(cudaFree(L.pre));
    if (L.post) DTL_CUDA_CHECK(cudaFree(L.post));
  }
  for (float* p : {params, grads, m, v, x, target, dy, d_a, d_b, ga, gw, gc}) DTL_CUDA_CHECK(cudaFree(p));
  return 0;
}

}  // namespace dtl::cli
