// What the elementwise kernels share: the launch shape (one thread per element in a
// grid-stride loop: the kernels are memory-bound, and the loop keeps the grid a fixed
// size), how each element type is widened to float and rounded back (the half types,
// exactly as the CPU path in core/comm/dtype.cpp), and how two values combine.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>

#include "core/comm/dtype.h"
#include "core/cuda/check.h"

namespace dtl::cuda {

constexpr int kThreads = 256;

inline unsigned blocks_for(std::size_t n) {
  const std::size_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 65535 * 8 ? (b > 0 ? b : 1) : 65535 * 8);  // grid-stride covers the rest
}

// Launches kernel over n elements on stream, and checks the launch.
#define DTL_LAUNCH(kernel, n, stream, ...)                                                 \
  do {                                                                                     \
    kernel<<<::dtl::cuda::blocks_for(n), ::dtl::cuda::kThreads, 0, stream>>>(__VA_ARGS__); \
    DTL_CUDA_CHECK(cudaGetLastError());                                                    \
  } while (0)

// Loads and stores through float for the half types, as the CPU path does.
template <typename T>
struct Widen {
  __device__ static float load(T v) { return float(v); }
  __device__ static T store(float v) { return T(v); }
};
template <>
struct Widen<__half> {
  __device__ static float load(__half v) { return __half2float(v); }
  __device__ static __half store(float v) { return __float2half_rn(v); }
};
template <>
struct Widen<__nv_bfloat16> {
  __device__ static float load(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};

template <typename T>
__device__ T combine(T a, T b, ReduceOp op) {
  if (op == ReduceOp::max) return a > b ? a : b;
  if (op == ReduceOp::min) return a < b ? a : b;
  return a + b;  // sum and avg
}

}  // namespace dtl::cuda
