// CPU kernels of the training labs: the fast path (OpenBLAS GEMM, vectorizable loops)
// and, in namespace reference, a plain float64 version of each that the tests hold the
// fast path to. Layouts follow PyTorch's nn.Linear: W is [out × in], rows of X are samples.
//
//   forward   Y = X·Wᵀ + b                          [B×O] = [B×I]·[I×O] + [O]
//   backward  dX = dY·W,  dW = dYᵀ·X,  db = Σ_rows dY
#pragma once

#include <cstddef>
#include <string>

#include "core/comm/dtype.h"

namespace dtl::kernels {

// One thread per rank, for OpenBLAS and the kernels: ranks are already the parallelism
// (call once per process). A rank given n cores: use_cpu_threads(n) (cpu_threads.h).
void use_one_blas_thread();
// The kernels OpenBLAS runs here, "OpenBLAS Cooperlake", and OPENBLAS_CORETYPE when the
// environment sets it (OpenBLAS then runs those kernels, whatever the CPU could).
std::string blas_kernels();

void linear_forward(const float* X, const float* W, const float* b, float* Y, int B, int I, int O);
// accumulate: dW and db are added to (gradient accumulation) instead of overwritten.
// dX null: no input gradient; dW (and db) null: the input gradient only (zero-bubble's
// split of backward into B and W, each a call). b null in forward and db null in backward:
// a layer without a bias (tensor parallelism's row-parallel layer on all ranks but one).
void linear_backward(const float* X, const float* W, const float* dY, float* dX, float* dW, float* db, int B, int I,
                     int O, bool accumulate = false);

// GELU, tanh form (Hendrycks & Gimpel): 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))).
void gelu_forward(const float* x, float* y, std::size_t n);
void gelu_backward(const float* x, const float* dy, float* dx, std::size_t n);

// The MLP's first layer and its GELU, fused: pre = X·Wᵀ + b (kept for the backward) and
// act = gelu(pre). The GEMM writes pre, then one pass adds the bias and applies the GELU;
// linear_forward + gelu_forward take three (the bias rows written, read back by the GEMM,
// pre read again by the GELU). b null: no bias.
void linear_gelu_forward(const float* X, const float* W, const float* b, float* pre, float* act, int B, int I, int O);

// out = a + b: the residual stream's addition in one pass (a copy and an axpy take two).
void residual_add(const float* a, const float* b, float* out, std::size_t n);

// Mean squared error over n values; writes dL/dy = 2(y - t)/n. Returns the loss.
float mse_loss(const float* y, const float* target, float* dy, std::size_t n);
// Softmax cross-entropy over B rows of C logits with integer labels; writes dL/dlogits
// (mean over rows). Returns the mean loss.
float softmax_cross_entropy(const float* logits, const int* labels, float* dlogits, int B, int C);

void sgd_step(float* w, const float* g, std::size_t n, float lr);

struct AdamWConfig {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.0f;
};
// One AdamW step (decoupled weight decay) at step t >= 1; m and v are the moments.
void adamw_step(float* w, const float* g, float* m, float* v, std::size_t n, const AdamWConfig& c, int t);

// Mixed-precision AdamW: the 16-bit gradients (dtype bf16 or f16), multiplied by
// inv_scale to undo the loss scale, update the fp32 master weights, m and v; the 16-bit
// parameters get the master rounded. Returns false and changes nothing if a gradient is
// inf or NaN (an fp16 loss scale that overflowed): the caller skips the step.
bool adamw_step_mixed(float* master, const void* grads, void* params, DType dtype, float* m, float* v, std::size_t n,
                      const AdamWConfig& c, int t, float inv_scale);

// y += a·x and x *= a: the elementwise pieces reductions and averaging use.
void axpy(float a, const float* x, float* y, std::size_t n);
void scale(float a, float* x, std::size_t n);

namespace reference {
void linear_forward(const float* X, const float* W, const float* b, float* Y, int B, int I, int O);
void linear_backward(const float* X, const float* W, const float* dY, float* dX, float* dW, float* db, int B, int I,
                     int O);
void gelu_forward(const float* x, float* y, std::size_t n);
void gelu_backward(const float* x, const float* dy, float* dx, std::size_t n);
float mse_loss(const float* y, const float* target, float* dy, std::size_t n);
float softmax_cross_entropy(const float* logits, const int* labels, float* dlogits, int B, int C);
void adamw_step(float* w, const float* g, float* m, float* v, std::size_t n, const AdamWConfig& c, int t);
}  // namespace reference

}  // namespace dtl::kernels
