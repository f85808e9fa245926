// The GPU ceiling of `dtlab bench-step --device cuda`: cublasSgemm of one hidden layer's
// forward shape on buffers of its own, timed with CUDA events. The step itself is the lab's
// own Mlp and AdamW on the GPU (step_bench_command.cpp).
#include <cuda_runtime_api.h>

#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/session.h"
#include "labs/cli/step_bench.h"

namespace dtl::cli {

double cublas_gemm_tflops(int B, int W) {
  cuda::GpuSession gpu(0);
  cuda::EventTimer timer(gpu.stream());
  const std::size_t a_n = std::size_t(B) * std::size_t(W), w_n = std::size_t(W) * std::size_t(W);
  float *a = nullptr, *w = nullptr, *c = nullptr;
  DTL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&a), a_n * sizeof(float)));
  DTL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&w), w_n * sizeof(float)));
  DTL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&c), a_n * sizeof(float)));
  DTL_CUDA_CHECK(cudaMemset(a, 0, a_n * sizeof(float)));
  DTL_CUDA_CHECK(cudaMemset(w, 0, w_n * sizeof(float)));
  const float one = 1.0f, zero = 0.0f;
  auto gemm = [&] {
    DTL_CUBLAS_CHECK(cublasSgemm(gpu.blas(), CUBLAS_OP_T, CUBLAS_OP_N, W, B, W, &one, w, W, a, W, &zero, c, W));
  };
  gemm();
  const double tflops = 2.0 * B * double(W) * W / timer.mean_seconds(10, gemm) * 1e-12;
  for (float* p : {a, w, c}) DTL_CUDA_CHECK(cudaFree(p));
  return tflops;
}

}  // namespace dtl::cli
