// `dtlab bench-kernels --device cuda`: the CUDA kernels on GPU 0, each timed with CUDA
// events (best of --repeats after one warm-up), beside two ceilings measured in the same
// run: cublasSgemm of the linear layer's shape, and a device-to-device cudaMemcpy (bytes
// read + written) for the memory-bound kernels.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>

#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/session.h"
#include "labs/cli/kernels_bench.h"

namespace dtl::cli {

namespace {

// A device buffer of n elements, filled from a normal distribution (bf16/f16: rounded).
struct DeviceArray {
  void* ptr = nullptr;
  DeviceArray(std::size_t n, DType t, unsigned seed) {
    DTL_CUDA_CHECK(cudaMalloc(&ptr, n * dtype_size(t)));
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> f(n);
    for (auto& x : f) x = std::fabs(d(rng)) + 0.01f;  // positive: usable as Adam's v too
    std::vector<unsigned char> host(n * dtype_size(t));
    from_float(f.data(), host.data(), t, n);
    DTL_CUDA_CHECK(cudaMemcpy(ptr, host.data(), host.size(), cudaMemcpyHostToDevice));
  }
  ~DeviceArray() { (void)cudaFree(ptr); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  float* f() const { return static_cast<float*>(ptr); }
};

}  // namespace

int run_cuda_kernel_bench(const KernelBenchSizes& s) {
  cuda::GpuSession gpu(0);
  cudaStream_t stream = gpu.stream();
  cublasHandle_t blas = gpu.blas();
  cuda::EventTimer timer(stream);
  const int B = s.batch, W = s.width, R = s.repeats;
  const std::size_t n = s.elements;

  // Ceilings.
  DeviceArray X(std::size_t(B) * W, DType::f32, 1), Wt(std::size_t(W) * W, DType::f32, 2),
      bias(std::size_t(W), DType::f32, 3);
  DeviceArray Y(std::size_t(B) * W, DType::f32, 4), dX(std::size_t(B) * W, DType::f32, 5),
      dW(std::size_t(W) * W, DType::f32, 6), db(std::size_t(W), DType::f32, 7);
  const float one = 1.0f, zero = 0.0f;
  const double gemm_flops = 2.0 * B * W * W;
  const double sgemm = gemm_flops / timer.best_seconds(R, [&] {
    DTL_CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, W, B, W, &one, Wt.f(), W, X.f(), W, &zero, Y.f(), W));
  }) * 1e-9;
  DeviceArray a(n, DType::f32, 8), b(n, DType::f32, 9), m(n, DType::f32, 10), v(n, DType::f32, 11),
      master(n, DType::f32, 12);
  DeviceArray g16(n, DType::bf16, 13), w16(n, DType::bf16, 14);
  const double bytes2 = 2.0 * double(n) * sizeof(float);
  const double d2d = bytes2 / timer.best_seconds(R, [&] {
    DTL_CUDA_CHECK(cudaMemcpyAsync(b.ptr, a.ptr, n * sizeof(float), cudaMemcpyDeviceToDevice, stream));
  }) * 1e-9;

  std::vector<KernelBenchRow> rows;
  auto gemm_row = [&](const char* name, double flops, const std::function<void()>& fn) {
    rows.push_back({name, "GFLOP/s", flops / timer.best_seconds(R, fn) * 1e-9, sgemm, 0});
  };
  auto memory_row = [&](const char* name, double bytes_per_element, const std::function<void()>& fn) {
    rows.push_back({name, "GB/s", bytes_per_element * double(n) / timer.best_seconds(R, fn) * 1e-9, d2d, 0});
  };
  gemm_row("linear forward  Y = X*W^T + b", gemm_flops,
           [&] { cuda::linear_forward(blas, X.f(), Wt.f(), bias.f(), Y.f(), B, W, W, stream); });
  gemm_row("linear backward dX, dW, db", 2 * gemm_flops,
           [&] { cuda::linear_backward(blas, X.f(), Wt.f(), Y.f(), dX.f(), dW.f(), db.f(), B, W, W, false, stream); });
  const kernels::AdamWConfig adam{};
  memory_row("gelu forward", 8, [&] { cuda::gelu_forward(a.f(), b.f(), n, stream); });
  memory_row("gelu backward", 12, [&] { cuda::gelu_backward(a.f(), m.f(), b.f(), n, stream); });
  memory_row("adamw (fp32)", 28, [&] { cuda::adamw_step(b.f(), a.f(), m.f(), v.f(), n, adam, 1, stream); });
  memory_row("adamw (bf16 grads, fp32 master)", 28,  // reads master, m, v, g16 (14 B), writes master, m, v, w16 (14 B)
             [&] {
               cuda::adamw_step_mixed(master.f(), g16.ptr, w16.ptr, DType::bf16, m.f(), v.f(), n, adam, 1, 1.0f,
                                      stream);
             });
  memory_row("axpy  y += a*x", 12, [&] { cuda::axpy(0.5f, a.f(), b.f(), n, stream); });
  memory_row("scale x *= a", 8, [&] { cuda::scale(0.999f, b.f(), n, stream); });
  memory_row("reduce_into f32 (sum)", 12,
             [&] { cuda::reduce_into(b.ptr, a.ptr, n, DType::f32, ReduceOp::sum, stream); });
  memory_row("reduce_into bf16 (sum)", 6,
             [&] { cuda::reduce_into(w16.ptr, g16.ptr, n, DType::bf16, ReduceOp::sum, stream); });

  char line1[400], line2[200];
  std::snprintf(line1, sizeof line1, "GPU 0: %s; GEMM %d x %d x %d; memory-bound kernels over %zu elements",
                gpu.device_name(), B, W, W, n);
  std::snprintf(line2, sizeof line2, "ceilings measured now: cublasSgemm %.1f GFLOP/s; device-to-device copy %.1f GB/s",
                sgemm, d2d);
  print_kernel_bench(s, {line1, line2}, rows, sgemm, d2d, "cuda");
  return 0;
}

}  // namespace dtl::cli
