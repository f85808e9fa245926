// The kernels behind DeviceOps on a GPU (kernels/cuda/device_ops_cuda.cpp): the
// reduction of many buffers that the threads backend's library collectives run, and the
// floating scale that scale_in_place runs. Each matches its CPU twin in
// core/comm/dtype.cpp bit for bit: the same left-to-right order, rounded after each step.
#include <cstdint>

#include "core/cuda/check.h"
#include "core/error.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/kernels.h"

namespace dtl::cuda {

namespace {

// Up to this many input pointers travel by value in the kernel's parameters.
constexpr int kMaxInputs = 32;
struct Inputs {
  const void* p[kMaxInputs];
};

// out[i] = in0[i] (op) in1[i] (op) ... Every input element is read before out[i] is
// written, and by the same thread, so out may alias any input (in-place collectives).
template <typename T>
__global__ void reduce_many_kernel(T* out, Inputs in, int n_in, std::size_t n, ReduceOp op) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    T acc = static_cast<const T*>(in.p[0])[i];
    for (int k = 1; k < n_in; ++k) acc = combine(acc, static_cast<const T*>(in.p[k])[i], op);
    out[i] = acc;
  }
}

// The same result written to every output: all inputs of element i are read before any
// output of element i is written, by one thread, so outputs may alias inputs.
struct Outputs {
  void* p[kMaxInputs];
};
template <typename T>
__global__ void reduce_to_all_kernel(Outputs out, int n_out, Inputs in, int n_in, std::size_t n, ReduceOp op) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    T acc = static_cast<const T*>(in.p[0])[i];
    for (int k = 1; k < n_in; ++k) acc = combine(acc, static_cast<const T*>(in.p[k])[i], op);
    for (int k = 0; k < n_out; ++k) static_cast<T*>(out.p[k])[i] = acc;
  }
}
template <typename H>
__global__ void reduce_to_all_half_kernel(Outputs out, int n_out, Inputs in, int n_in, std::size_t n, ReduceOp op) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    H acc = static_cast<const H*>(in.p[0])[i];
    for (int k = 1; k < n_in; ++k)
      acc = Widen<H>::store(combine(Widen<H>::load(acc), Widen<H>::load(static_cast<const H*>(in.p[k])[i]), op));
    for (int k = 0; k < n_out; ++k) static_cast<H*>(out.p[k])[i] = acc;
  }
}

template <typename H>  // __half or __nv_bfloat16: rounded after each step, as the CPU's fold
__global__ void reduce_many_half_kernel(H* out, Inputs in, int n_in, std::size_t n, ReduceOp op) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    H acc = static_cast<const H*>(in.p[0])[i];
    for (int k = 1; k < n_in; ++k)
      acc = Widen<H>::store(combine(Widen<H>::load(acc), Widen<H>::load(static_cast<const H*>(in.p[k])[i]), op));
    out[i] = acc;
  }
}

template <typename T>  // float: multiply by float(factor); double: by factor (as the CPU)
__global__ void scale_kernel_of(T* buf, std::size_t n, T factor) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    buf[i] = buf[i] * factor;
}

template <typename H>
__global__ void scale_half_kernel(H* buf, std::size_t n, float factor) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    buf[i] = Widen<H>::store(Widen<H>::load(buf[i]) * factor);
}

void launch_reduce_many(void* out, const Inputs& in, int n_in, std::size_t n, DType t, ReduceOp op, cudaStream_t s) {
  switch (t) {
    case DType::f32: DTL_LAUNCH(reduce_many_kernel<float>, n, s, static_cast<float*>(out), in, n_in, n, op); return;
    case DType::f64: DTL_LAUNCH(reduce_many_kernel<double>, n, s, static_cast<double*>(out), in, n_in, n, op); return;
    case DType::i32:
      DTL_LAUNCH(reduce_many_kernel<std::int32_t>, n, s, static_cast<std::int32_t*>(out), in, n_in, n, op);
      return;
    case DType::i64:
      DTL_LAUNCH(reduce_many_kernel<long long>, n, s, static_cast<long long*>(out), in, n_in, n, op);
      return;
    case DType::f16:
      DTL_LAUNCH(reduce_many_half_kernel<__half>, n, s, static_cast<__half*>(out), in, n_in, n, op);
      return;
    case DType::bf16:
      DTL_LAUNCH(reduce_many_half_kernel<__nv_bfloat16>, n, s, static_cast<__nv_bfloat16*>(out), in, n_in, n, op);
      return;
  }
}

}  // namespace

void reduce_many(void* out, const void* const* inputs, int n_inputs, std::size_t n, DType t, ReduceOp op,
                 cudaStream_t s) {
  if (n == 0 || n_inputs < 1) return;
  Inputs in{};
  if (n_inputs <= kMaxInputs) {
    for (int k = 0; k < n_inputs; ++k) in.p[k] = inputs[k];
    launch_reduce_many(out, in, n_inputs, n, t, op, s);
    return;
  }
  // More ranks than fit in one launch: fold into a separate accumulator, kMaxInputs - 1 new
  // inputs per launch (the accumulator is input 0), so out may still alias any input.
  void* acc = nullptr;
  const std::size_t bytes = n * dtype_size(t);
  DTL_CUDA_CHECK(cudaMallocAsync(&acc, bytes, s));
  int k = 0;
  for (; k < kMaxInputs; ++k) in.p[k] = inputs[k];
  launch_reduce_many(acc, in, kMaxInputs, n, t, op, s);
  while (k < n_inputs) {
    int m = 1;
    in.p[0] = acc;
    for (; m < kMaxInputs && k < n_inputs; ++m, ++k) in.p[m] = inputs[k];
    launch_reduce_many(acc, in, m, n, t, op, s);
  }
  DTL_CUDA_CHECK(cudaMemcpyAsync(out, acc, bytes, cudaMemcpyDeviceToDevice, s));
  DTL_CUDA_CHECK(cudaFreeAsync(acc, s));
}

void reduce_many_to(void* const* outputs, int n_outputs, const void* const* inputs, int n_inputs, std::size_t n,
                    DType t, ReduceOp op, cudaStream_t s) {
  if (n == 0 || n_inputs < 1 || n_outputs < 1) return;
  if (n_inputs > kMaxInputs || n_outputs > kMaxInputs)
    throw Error("reduce_many_to: at most " + std::to_string(kMaxInputs) + " inputs and outputs per launch");
  Inputs in{};
  Outputs out{};
  for (int k = 0; k < n_inputs; ++k) in.p[k] = inputs[k];
  for (int k = 0; k < n_outputs; ++k) out.p[k] = outputs[k];
  switch (t) {
    case DType::f32: DTL_LAUNCH(reduce_to_all_kernel<float>, n, s, out, n_outputs, in, n_inputs, n, op); return;
    case DType::f64: DTL_LAUNCH(reduce_to_all_kernel<double>, n, s, out, n_outputs, in, n_inputs, n, op); return;
    case DType::i32: DTL_LAUNCH(reduce_to_all_kernel<std::int32_t>, n, s, out, n_outputs, in, n_inputs, n, op); return;
    case DType::i64: DTL_LAUNCH(reduce_to_all_kernel<long long>, n, s, out, n_outputs, in, n_inputs, n, op); return;
    case DType::f16: DTL_LAUNCH(reduce_to_all_half_kernel<__half>, n, s, out, n_outputs, in, n_inputs, n, op); return;
    case DType::bf16:
      DTL_LAUNCH(reduce_to_all_half_kernel<__nv_bfloat16>, n, s, out, n_outputs, in, n_inputs, n, op);
      return;
  }
}

void scale_floating(void* buf, std::size_t n, DType t, double factor, cudaStream_t s) {
  if (n == 0) return;
  switch (t) {
    case DType::f32: DTL_LAUNCH(scale_kernel_of<float>, n, s, static_cast<float*>(buf), n, float(factor)); return;
    case DType::f64: DTL_LAUNCH(scale_kernel_of<double>, n, s, static_cast<double*>(buf), n, factor); return;
    case DType::f16: DTL_LAUNCH(scale_half_kernel<__half>, n, s, static_cast<__half*>(buf), n, float(factor)); return;
    case DType::bf16:
      DTL_LAUNCH(scale_half_kernel<__nv_bfloat16>, n, s, static_cast<__nv_bfloat16*>(buf), n, float(factor));
      return;
    default: throw UsageError("scale: " + std::string(dtype_name(t)) + " is not a floating type");
  }
}

// ---- 16-bit storage of the model: widen to fp32 and round back (mixed precision) ----

template <typename T>
__global__ void to_float_kernel(const T* src, float* dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(blockDim.x) * gridDim.x)
    dst[i] = Widen<T>::load(src[i]);
}

template <typename T>  // round once, after the add, as the CPU's from_float
__global__ void from_float_kernel(const float* src, T* dst, std::size_t n, bool accumulate) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(blockDim.x) * gridDim.x)
    dst[i] = Widen<T>::store(accumulate ? Widen<T>::load(dst[i]) + src[i] : src[i]);
}

void to_float(const void* src, DType t, float* dst, std::size_t n, cudaStream_t s) {
  if (n == 0) return;
  switch (t) {
    case DType::f32: DTL_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, s)); return;
    case DType::f16: DTL_LAUNCH(to_float_kernel<__half>, n, s, static_cast<const __half*>(src), dst, n); return;
    case DType::bf16:
      DTL_LAUNCH(to_float_kernel<__nv_bfloat16>, n, s, static_cast<const __nv_bfloat16*>(src), dst, n);
      return;
    default: throw UsageError("to_float: " + std::string(dtype_name(t)) + " is not f32, f16 or bf16");
  }
}

void from_float(const float* src, void* dst, DType t, std::size_t n, bool accumulate, cudaStream_t s) {
  if (n == 0) return;
  switch (t) {
    case DType::f32:
      if (accumulate)
        DTL_LAUNCH(from_float_kernel<float>, n, s, src, static_cast<float*>(dst), n, true);
      else
        DTL_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, s));
      return;
    case DType::f16: DTL_LAUNCH(from_float_kernel<__half>, n, s, src, static_cast<__half*>(dst), n, accumulate); return;
    case DType::bf16:
      DTL_LAUNCH(from_float_kernel<__nv_bfloat16>, n, s, src, static_cast<__nv_bfloat16*>(dst), n, accumulate);
      return;
    default: throw UsageError("from_float: " + std::string(dtype_name(t)) + " is not f32, f16 or bf16");
  }
}

__global__ void nonfinite_kernel(const float* x, std::size_t n, int* flag) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(blockDim.x) * gridDim.x)
    if (!isfinite(x[i])) *flag = 1;
}

bool all_finite(const float* x, std::size_t n, cudaStream_t s) {
  if (n == 0) return true;
  int* flag = nullptr;
  DTL_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&flag), sizeof(int), s));
  DTL_CUDA_CHECK(cudaMemsetAsync(flag, 0, sizeof(int), s));
  DTL_LAUNCH(nonfinite_kernel, n, s, x, n, flag);
  int host = 0;
  DTL_CUDA_CHECK(cudaMemcpyAsync(&host, flag, sizeof(int), cudaMemcpyDeviceToHost, s));
  DTL_CUDA_CHECK(cudaFreeAsync(flag, s));
  DTL_CUDA_CHECK(cudaStreamSynchronize(s));
  return host == 0;
}

}  // namespace dtl::cuda
