// The elementwise CUDA kernels (see kernels.h). One thread per element in a grid-stride
// loop: these kernels are memory-bound, and the loop keeps the grid a fixed size.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/kernels.h"

namespace dtl::cuda {

namespace {

template <typename T>
__global__ void reduce_into_kernel(T* dst, const T* src, std::size_t n, ReduceOp op) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    dst[i] = combine(dst[i], src[i], op);
}

template <typename H>  // __half or __nv_bfloat16: widen, combine in float, round once
__global__ void reduce_into_half_kernel(H* dst, const H* src, std::size_t n, ReduceOp op) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    dst[i] = Widen<H>::store(combine(Widen<H>::load(dst[i]), Widen<H>::load(src[i]), op));
}

template <typename T>  // float and double
__global__ void divide_kernel(T* buf, std::size_t n, int d) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    buf[i] = buf[i] / T(d);
}

template <typename H>  // __half or __nv_bfloat16
__global__ void divide_half_kernel(H* buf, std::size_t n, int d) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    buf[i] = Widen<H>::store(Widen<H>::load(buf[i]) / float(d));
}

template <typename I>  // integers divide with truncation, like the CPU path
__global__ void divide_int_kernel(I* buf, std::size_t n, int d) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    buf[i] = buf[i] / I(d);
}

// Rounded multiply, then rounded add (no fused multiply-add, which nvcc would otherwise
// emit): the same two roundings as the CPU, so results match it bit for bit.
__global__ void axpy_kernel(float a, const float* x, float* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    y[i] = __fadd_rn(y[i], __fmul_rn(a, x[i]));
}

__global__ void scale_kernel(float a, float* x, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    x[i] *= a;
}

constexpr float kGeluC = 0.7978845608028654f;  // √(2/π)

__global__ void gelu_forward_kernel(const float* x, float* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(kGeluC * (v + 0.044715f * v * v * v)));
  }
}

__global__ void gelu_backward_kernel(const float* x, const float* dy, float* dx, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const float v = x[i];
    const float t = tanhf(kGeluC * (v + 0.044715f * v * v * v));
    const float dt = (1.0f - t * t) * kGeluC * (1.0f + 3.0f * 0.044715f * v * v);
    dx[i] = dy[i] * (0.5f * (1.0f + t) + 0.5f * v * dt);
  }
}

// Each thread adds its squared differences into a double total (atomicAdd on double:
// sm_60 and later), and writes dL/dy = 2(y - t)/n.
__global__ void mse_kernel(const float* y, const float* t, float* dy, std::size_t n, double* total) {
  double local = 0;
  const float k = 2.0f / float(n);
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const float d = y[i] - t[i];
    local += double(d) * double(d);
    dy[i] = k * d;
  }
  atomicAdd(total, local);
}

// A block's threads combine their values; every thread gets the result.
template <typename T, typename Op>
__device__ T block_all_reduce(T v, Op op, T* shared) {
  for (int o = 16; o > 0; o /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = shared[0];
  for (int w = 1; w < warps; ++w) v = op(v, shared[w]);
  __syncthreads();  // shared is free again for the next reduction
  return v;
}

// One block per row (a vocabulary is long: 32k-50k classes): the max for stability, the
// log of the sum of exponentials (in double, as the CPU's), then the gradient
// (softmax − one-hot)/B, each pass strided over the row's C classes.
__global__ void softmax_ce_kernel(const float* logits, const int* labels, float* dlogits, int B, int C, double* total) {
  __shared__ float shared_max[32];
  __shared__ double shared_sum[32];
  const int r = blockIdx.x;
  const float* z = logits + std::size_t(r) * C;
  float* dz = dlogits + std::size_t(r) * C;
  float mx = -INFINITY;
  for (int c = threadIdx.x; c < C; c += blockDim.x) mx = fmaxf(mx, z[c]);
  mx = block_all_reduce(
      mx, [](float a, float b) { return fmaxf(a, b); }, shared_max);
  double sum = 0;
  for (int c = threadIdx.x; c < C; c += blockDim.x) sum += exp(double(z[c] - mx));
  sum = block_all_reduce(
      sum, [](double a, double b) { return a + b; }, shared_sum);
  const double log_sum = log(sum) + double(mx);
  if (threadIdx.x == 0) atomicAdd(total, log_sum - double(z[labels[r]]));
  for (int c = threadIdx.x; c < C; c += blockDim.x)
    dz[c] = float((exp(double(z[c]) - log_sum) - (c == labels[r] ? 1.0 : 0.0)) / B);
}

// Reads back one double the kernels summed into, then frees it.
double read_total_and_free(double* total, cudaStream_t s) {
  double host = 0;
  DTL_CUDA_CHECK(cudaMemcpyAsync(&host, total, sizeof(double), cudaMemcpyDeviceToHost, s));
  DTL_CUDA_CHECK(cudaFreeAsync(total, s));
  DTL_CUDA_CHECK(cudaStreamSynchronize(s));
  return host;
}

double* zeroed_total(cudaStream_t s) {
  double* total = nullptr;
  DTL_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&total), sizeof(double), s));
  DTL_CUDA_CHECK(cudaMemsetAsync(total, 0, sizeof(double), s));
  return total;
}

struct AdamArgs {
  float lr, beta1, beta2, eps, weight_decay, inv_bc1, inv_bc2;
};

AdamArgs adam_args(const kernels::AdamWConfig& c, int t) {
  return {c.lr,
          c.beta1,
          c.beta2,
          c.eps,
          c.weight_decay,
          1.0f / (1.0f - std::pow(c.beta1, float(t))),
          1.0f / (1.0f - std::pow(c.beta2, float(t)))};
}

__device__ float adam_update(float& w, float g, float& m, float& v, const AdamArgs& a) {
  m = a.beta1 * m + (1.0f - a.beta1) * g;
  v = a.beta2 * v + (1.0f - a.beta2) * g * g;
  const float update = (m * a.inv_bc1) / (sqrtf(v * a.inv_bc2) + a.eps);
  w -= a.lr * (update + a.weight_decay * w);
  return w;
}

__global__ void adamw_kernel(float* w, const float* g, float* m, float* v, std::size_t n, AdamArgs a) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    adam_update(w[i], g[i], m[i], v[i], a);
}

template <typename H>
__global__ void any_nonfinite_kernel(const H* g, std::size_t n, int* flag) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    if (!isfinite(Widen<H>::load(g[i]))) *flag = 1;  // any writer wins; the value is all that matters
}

template <typename H>
__global__ void adamw_mixed_kernel(float* master, const H* g, H* params, float* m, float* v, std::size_t n, AdamArgs a,
                                   float inv_scale) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    params[i] = Widen<H>::store(adam_update(master[i], Widen<H>::load(g[i]) * inv_scale, m[i], v[i], a));
}

// db[o] = Σ_rows dY[r][o] (+ db[o] when accumulating), in two stages so every SM has work
// (a 768-wide layer has 3 blocks of columns): block (x, y) sums chunk y's rows of 32
// columns — a warp reads 32 consecutive floats of a row, 8 warps every 8th row, meeting in
// shared memory — into partial[y][o]; then one thread per column adds the chunks in order.
// No atomics: deterministic.
constexpr int kBiasCols = 32, kBiasRowSplit = 8, kBiasRowsPerChunk = 64;

__global__ void bias_grad_partial_kernel(const float* dY, float* partial, int B, int O) {
  __shared__ float sums[kBiasRowSplit][kBiasCols + 1];
  const int o = blockIdx.x * kBiasCols + threadIdx.x;
  const int first = blockIdx.y * kBiasRowsPerChunk, last = min(B, first + kBiasRowsPerChunk);
  float s = 0;
  if (o < O)
    for (int r = first + int(threadIdx.y); r < last; r += kBiasRowSplit) s += dY[std::size_t(r) * O + o];
  sums[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y != 0 || o >= O) return;
  float t = 0;
  for (int k = 0; k < kBiasRowSplit; ++k) t += sums[k][threadIdx.x];
  partial[std::size_t(blockIdx.y) * O + o] = t;
}

__global__ void bias_grad_finish_kernel(const float* partial, float* db, int chunks, int O, bool accumulate) {
  const int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= O) return;
  float s = accumulate ? db[o] : 0.0f;
  for (int k = 0; k < chunks; ++k) s += partial[std::size_t(k) * O + o];
  db[o] = s;
}

// Y[r][o] = b[o] for every row, before the GEMM adds X·Wᵀ (beta = 1).
__global__ void broadcast_bias_kernel(float* Y, const float* b, int B, int O) {
  const std::size_t n = std::size_t(B) * O;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    Y[i] = b[i % std::size_t(O)];
}

}  // namespace

void reduce_into(void* dst, const void* src, std::size_t n, DType t, ReduceOp op, cudaStream_t s) {
  if (n == 0) return;
  switch (t) {
    case DType::f32:
      DTL_LAUNCH(reduce_into_kernel<float>, n, s, static_cast<float*>(dst), static_cast<const float*>(src), n, op);
      return;
    case DType::f64:
      DTL_LAUNCH(reduce_into_kernel<double>, n, s, static_cast<double*>(dst), static_cast<const double*>(src), n, op);
      return;
    case DType::i32:
      DTL_LAUNCH(reduce_into_kernel<std::int32_t>, n, s, static_cast<std::int32_t*>(dst),
                 static_cast<const std::int32_t*>(src), n, op);
      return;
    case DType::i64:
      DTL_LAUNCH(reduce_into_kernel<long long>, n, s, static_cast<long long*>(dst), static_cast<const long long*>(src),
                 n, op);
      return;
    case DType::f16:
      DTL_LAUNCH(reduce_into_half_kernel<__half>, n, s, static_cast<__half*>(dst), static_cast<const __half*>(src), n,
                 op);
      return;
    case DType::bf16:
      DTL_LAUNCH(reduce_into_half_kernel<__nv_bfloat16>, n, s, static_cast<__nv_bfloat16*>(dst),
                 static_cast<const __nv_bfloat16*>(src), n, op);
      return;
  }
}

void finish_average(void* buf, std::size_t n, DType t, ReduceOp op, int d, cudaStream_t s) {
  if (op != ReduceOp::avg || d == 1 || n == 0) return;
  switch (t) {
    case DType::f32: DTL_LAUNCH(divide_kernel<float>, n, s, static_cast<float*>(buf), n, d); return;
    case DType::f64: DTL_LAUNCH(divide_kernel<double>, n, s, static_cast<double*>(buf), n, d); return;
    case DType::i32: DTL_LAUNCH(divide_int_kernel<std::int32_t>, n, s, static_cast<std::int32_t*>(buf), n, d); return;
    case DType::i64: DTL_LAUNCH(divide_int_kernel<long long>, n, s, static_cast<long long*>(buf), n, d); return;
    case DType::f16: DTL_LAUNCH(divide_half_kernel<__half>, n, s, static_cast<__half*>(buf), n, d); return;
    case DType::bf16:
      DTL_LAUNCH(divide_half_kernel<__nv_bfloat16>, n, s, static_cast<__nv_bfloat16*>(buf), n, d);
      return;
  }
}

void axpy(float a, const float* x, float* y, std::size_t n, cudaStream_t s) {
  if (n) DTL_LAUNCH(axpy_kernel, n, s, a, x, y, n);
}
void scale(float a, float* x, std::size_t n, cudaStream_t s) {
  if (n) DTL_LAUNCH(scale_kernel, n, s, a, x, n);
}
void gelu_forward(const float* x, float* y, std::size_t n, cudaStream_t s) {
  if (n) DTL_LAUNCH(gelu_forward_kernel, n, s, x, y, n);
}
void gelu_backward(const float* x, const float* dy, float* dx, std::size_t n, cudaStream_t s) {
  if (n) DTL_LAUNCH(gelu_backward_kernel, n, s, x, dy, dx, n);
}

float mse_loss(const float* y, const float* target, float* dy, std::size_t n, cudaStream_t s) {
  double* total = zeroed_total(s);
  if (n) DTL_LAUNCH(mse_kernel, n, s, y, target, dy, n, total);
  return float(read_total_and_free(total, s) / double(n));
}

float softmax_cross_entropy(const float* logits, const int* labels, float* dlogits, int B, int C, cudaStream_t s) {
  double* total = zeroed_total(s);
  if (B > 0) softmax_ce_kernel<<<B, kThreads, 0, s>>>(logits, labels, dlogits, B, C, total);
  DTL_CUDA_CHECK(cudaGetLastError());
  return float(read_total_and_free(total, s) / B);
}

void sgd_step(float* w, const float* g, std::size_t n, float lr, cudaStream_t s) { axpy(-lr, g, w, n, s); }

void adamw_step(float* w, const float* g, float* m, float* v, std::size_t n, const kernels::AdamWConfig& c, int t,
                cudaStream_t s) {
  if (n) DTL_LAUNCH(adamw_kernel, n, s, w, g, m, v, n, adam_args(c, t));
}

bool adamw_step_mixed(float* master, const void* grads, void* params, DType dtype, float* m, float* v, std::size_t n,
                      const kernels::AdamWConfig& c, int t, float inv_scale, cudaStream_t s) {
  if (dtype != DType::bf16 && dtype != DType::f16) throw UsageError("adamw_step_mixed: gradients must be bf16 or f16");
  int* flag = nullptr;
  DTL_CUDA_CHECK(cudaMallocAsync(&flag, sizeof(int), s));
  DTL_CUDA_CHECK(cudaMemsetAsync(flag, 0, sizeof(int), s));
  if (dtype == DType::bf16)
    DTL_LAUNCH(any_nonfinite_kernel<__nv_bfloat16>, n, s, static_cast<const __nv_bfloat16*>(grads), n, flag);
  else
    DTL_LAUNCH(any_nonfinite_kernel<__half>, n, s, static_cast<const __half*>(grads), n, flag);
  int overflow = 0;
  DTL_CUDA_CHECK(cudaMemcpyAsync(&overflow, flag, sizeof(int), cudaMemcpyDeviceToHost, s));
  DTL_CUDA_CHECK(cudaFreeAsync(flag, s));
  DTL_CUDA_CHECK(cudaStreamSynchronize(s));
  if (overflow) return false;
  const AdamArgs a = adam_args(c, t);
  if (dtype == DType::bf16)
    DTL_LAUNCH(adamw_mixed_kernel<__nv_bfloat16>, n, s, master, static_cast<const __nv_bfloat16*>(grads),
               static_cast<__nv_bfloat16*>(params), m, v, n, a, inv_scale);
  else
    DTL_LAUNCH(adamw_mixed_kernel<__half>, n, s, master, static_cast<const __half*>(grads),
               static_cast<__half*>(params), m, v, n, a, inv_scale);
  return true;
}

// Row-major nn.Linear through column-major cuBLAS: a row-major [r × c] matrix is a
// column-major [c × r] one, its transpose. So Y = X·Wᵀ becomes Yᵀ = W·Xᵀ, i.e. with the
// buffers as cuBLAS sees them (W as [I × O], X as [I × B], Y as [O × B]):
//   forward   Y(O×B)  = op_T(W)(O×I) · X(I×B)
//   dX        dX(I×B) = W(I×O) · dY(O×B)
//   dW        dW(I×O) = X(I×B) · op_T(dY)(B×O)
void linear_forward(cublasHandle_t h, const float* X, const float* W, const float* b, float* Y, int B, int I, int O,
                    cudaStream_t s) {
  DTL_CUBLAS_CHECK(cublasSetStream(h, s));
  if (b) DTL_LAUNCH(broadcast_bias_kernel, std::size_t(B) * O, s, Y, b, B, O);
  const float one = 1.0f, zero = 0.0f;  // without a bias Y is overwritten
  DTL_CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, O, B, I, &one, W, I, X, I, b ? &one : &zero, Y, O));
}

void linear_backward(cublasHandle_t h, const float* X, const float* W, const float* dY, float* dX, float* dW, float* db,
                     int B, int I, int O, bool accumulate, cudaStream_t s) {
  DTL_CUBLAS_CHECK(cublasSetStream(h, s));
  const float one = 1.0f, zero = 0.0f;
  if (dX) DTL_CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, I, B, O, &one, W, I, dY, O, &zero, dX, I));
  if (!dW) return;  // the input gradient only (zero-bubble's B); the weight part runs later (W)
  DTL_CUBLAS_CHECK(
      cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, I, O, B, &one, X, I, dY, O, accumulate ? &one : &zero, dW, I));
  if (!db) return;  // a layer without a bias
  const int chunks = std::max(1, (B + kBiasRowsPerChunk - 1) / kBiasRowsPerChunk);
  float* partial = nullptr;
  DTL_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&partial), std::size_t(chunks) * O * sizeof(float), s));
  const dim3 block(kBiasCols, kBiasRowSplit), grid(unsigned((O + kBiasCols - 1) / kBiasCols), unsigned(chunks));
  bias_grad_partial_kernel<<<grid, block, 0, s>>>(dY, partial, B, O);
  DTL_CUDA_CHECK(cudaGetLastError());
  bias_grad_finish_kernel<<<(O + kThreads - 1) / kThreads, kThreads, 0, s>>>(partial, db, chunks, O, accumulate);
  DTL_CUDA_CHECK(cudaGetLastError());
  DTL_CUDA_CHECK(cudaFreeAsync(partial, s));
}

}  // namespace dtl::cuda
