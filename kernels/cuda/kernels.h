// The CUDA kernels of the labs, each the GPU twin of a CPU kernel (kernels/cpu/kernels.h,
// core/comm/dtype.h) and held to it by tests/gpu/cuda_kernels_test.cpp. All pointers are
// device pointers; every function launches on `stream` and returns without waiting.
//
//   reduce_into        dst = dst (op) src, elementwise: the reduction step of every lab
//                      collective (ring, tree, ...) when buffers live on the GPU. Half
//                      types widen to float, combine and round to nearest even, exactly
//                      like the CPU path, so results are bit-identical to it.
//   finish_average     dst /= P for ReduceOp::avg
//   reduce_many, scale_floating   what DeviceOps runs on a GPU (buffer_kernels.cu)
//   axpy, scale        y += a·x, x *= a
//   gelu forward/back  tanh-form GELU
//   mse, softmax CE    losses and their gradients
//   sgd                w -= lr·g
//   adamw              fp32, and mixed precision (16-bit grads and weights, fp32 master)
//   linear forward/back  through cuBLAS (row-major like nn.Linear: W is [out × in])
//   the GPT's ops      LayerNorm, causal multi-head attention (cuBLAS + softmax kernels),
//                      vocab-parallel embedding (transformer_kernels.cu), the twins of
//                      kernels/cpu/transformer_kernels.h with the same arguments and the
//                      same add-or-overwrite rules; tests/gpu/cuda_transformer_test.cpp
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/comm/dtype.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/transformer_kernels.h"

namespace dtl::cuda {

void reduce_into(void* dst, const void* src, std::size_t n, DType t, ReduceOp op, cudaStream_t stream);
void finish_average(void* buf, std::size_t n, DType t, ReduceOp op, int divisor, cudaStream_t stream);
// out = in0 (op) in1 (op) ... in that order, rounded after each step (core's reduce_many);
// out may alias an input. All pointers on the stream's GPU.
void reduce_many(void* out, const void* const* inputs, int n_inputs, std::size_t n, DType t, ReduceOp op,
                 cudaStream_t stream);
// Every outputs[k] = in0 (op) in1 (op) ..., in one pass: each input read once, each output
// written once (the threads backend's all_reduce: 2·P·N bytes, the least possible).
// At most 32 inputs and 32 outputs; outputs may alias inputs.
void reduce_many_to(void* const* outputs, int n_outputs, const void* const* inputs, int n_inputs, std::size_t n,
                    DType t, ReduceOp op, cudaStream_t s);
// buf *= factor for f32 (by float(factor)), f64, f16 and bf16 (widened, rounded back).
void scale_floating(void* buf, std::size_t n, DType t, double factor, cudaStream_t stream);

// The model's 16-bit storage: dst = float(src); dst = round(src) or round(dst + src) when
// accumulating, rounded to nearest even exactly like dtl::to_float / from_float on the CPU.
void to_float(const void* src, DType t, float* dst, std::size_t n, cudaStream_t stream);
void from_float(const float* src, void* dst, DType t, std::size_t n, bool accumulate, cudaStream_t stream);

// True when no element is inf or NaN; waits for `stream`.
bool all_finite(const float* x, std::size_t n, cudaStream_t stream);

void axpy(float a, const float* x, float* y, std::size_t n, cudaStream_t stream);
void scale(float a, float* x, std::size_t n, cudaStream_t stream);
void gelu_forward(const float* x, float* y, std::size_t n, cudaStream_t stream);
void gelu_backward(const float* x, const float* dy, float* dx, std::size_t n, cudaStream_t stream);

// The losses return their value, so they wait for `stream` (once, at the end).
float mse_loss(const float* y, const float* target, float* dy, std::size_t n, cudaStream_t stream);
// labels: device array of B class indices in [0, C).
float softmax_cross_entropy(const float* logits, const int* labels, float* dlogits, int B, int C, cudaStream_t stream);

void sgd_step(float* w, const float* g, std::size_t n, float lr, cudaStream_t stream);
void adamw_step(float* w, const float* g, float* m, float* v, std::size_t n, const kernels::AdamWConfig& c, int t,
                cudaStream_t stream);
// Mixed precision, as kernels::adamw_step_mixed: returns false (and changes nothing) when a
// gradient is inf/NaN. Waits for `stream` once, to read the overflow flag.
bool adamw_step_mixed(float* master, const void* grads, void* params, DType dtype, float* m, float* v, std::size_t n,
                      const kernels::AdamWConfig& c, int t, float inv_scale, cudaStream_t stream);

// Y = X·Wᵀ + b and its backward (dX may be null; accumulate adds to dW and db).
void linear_forward(cublasHandle_t h, const float* X, const float* W, const float* b, float* Y, int B, int I, int O,
                    cudaStream_t stream);
void linear_backward(cublasHandle_t h, const float* X, const float* W, const float* dY, float* dX, float* dW, float* db,
                     int B, int I, int O, bool accumulate, cudaStream_t stream);

// ---- the GPT's ops (transformer_kernels.cu) -------------------------------------------
// As kernels::layernorm_forward / _backward: y, mean, rstd written; dx, dw, db ADDED to.
// Launch: one block of 256 threads per row (block reductions through warp shuffles); dw
// and db from a second kernel, blocks of 32 columns × 8 row groups, no atomics.
void layernorm_forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd, int rows,
                       int width, float eps, cudaStream_t stream);
void layernorm_backward(const float* x, const float* w, const float* mean, const float* rstd, const float* dy,
                        float* dx, float* dw, float* db, int rows, int width, cudaStream_t stream);
// As kernels::attention_forward / _backward (out and probs written; dqkv overwritten).
// GEMMs through cublasSgemmStridedBatched on `h` (bound to `stream` here), the (b, head)
// pairs batched over the larger of batch and heads; the causal softmax and its backward one
// warp per S-long row. attention_backward needs `scratch` of
// attention_backward_scratch_floats(s) floats on the device (the caller's workspace).
void attention_forward(cublasHandle_t h, const float* qkv, float* out, float* probs, const kernels::AttentionShape& s,
                       cudaStream_t stream);
std::size_t attention_backward_scratch_floats(const kernels::AttentionShape& s);
void attention_backward(cublasHandle_t h, const float* qkv, const float* probs, const float* dout, float* dqkv,
                        float* scratch, const kernels::AttentionShape& s, cudaStream_t stream);
// As kernels::embedding_forward / _backward, tokens a DEVICE array of `rows` ids. out is
// written (zeros for tokens outside this rank's slice). The backward also takes, on the
// device, kernels::rows_by_token(tokens): it adds each token's rows in row order without
// atomics, so dtable equals the CPU's bit for bit and every run's.
void embedding_forward(const int* tokens, const float* table, int vocab_begin, int vocab_local, float* out, int rows,
                       int width, cudaStream_t stream);
// As kernels::position_forward / _backward (the GPT's wpe), one launch each.
void position_forward(const float* table, float* x, int rows, int width, int rows_per_position, cudaStream_t s);
void position_backward(const float* dx, float* dtable, int rows, int width, int rows_per_position, cudaStream_t s);
void embedding_backward(const int* tokens, const int* rows_by_token, const float* dout, float* dtable, int vocab_begin,
                        int vocab_local, int rows, int width, cudaStream_t stream);

}  // namespace dtl::cuda
