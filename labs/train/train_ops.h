// TrainOps: the compute a training step needs, for the device its tensors live on. The
// model and the optimizers call these and nothing else, so one Mlp and one AdamW run on
// the CPU (OpenBLAS + vectorized loops, kernels/cpu) and on a GPU (cuBLAS + CUDA kernels,
// kernels/cuda) without a second copy of the model code. Moving and reducing bytes
// between ranks is DeviceOps' job (core/memory/device_ops.h); this is the arithmetic.
//
// Pointers are on the ops' device. On a GPU the calls are queued on the calling thread's
// stream (the same stream DeviceOps uses, so a copy after a kernel sees its result);
// synchronize() waits for it. The model calls synchronize() before every hook, because a
// hook may hand a buffer to another thread (a DDP bucket to the comm stream).
#pragma once

#include <cstddef>
#include <vector>

#include "core/comm/dtype.h"
#include "core/memory/device_ops.h"
#include "core/memory/memory.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/transformer_kernels.h"

namespace dtl {

class TrainOps {
 public:
  virtual ~TrainOps() = default;
  virtual Device device() const = 0;
  virtual void synchronize() = 0;

  // Y = X·Wᵀ + b over B rows (W is [O × I], as nn.Linear); backward: dX = dY·W (dX may be
  // null), dW = dYᵀ·X, db = Σ dY, added to dW and db when `accumulate`.
  virtual void linear_forward(const float* X, const float* W, const float* b, float* Y, int B, int I, int O) = 0;
  virtual void linear_backward(const float* X, const float* W, const float* dY, float* dX, float* dW, float* db, int B,
                               int I, int O, bool accumulate) = 0;
  virtual void gelu_forward(const float* x, float* y, std::size_t n) = 0;
  virtual void gelu_backward(const float* x, const float* dy, float* dx, std::size_t n) = 0;
  // pre = X·Wᵀ + b and act = gelu(pre): the two ops above by default; the CPU's fuses the
  // bias and the GELU into one pass after the GEMM (kernels::linear_gelu_forward).
  virtual void linear_gelu_forward(const float* X, const float* W, const float* b, float* pre, float* act, int B, int I,
                                   int O) {
    linear_forward(X, W, b, pre, B, I, O);
    gelu_forward(pre, act, std::size_t(B) * std::size_t(O));
  }
  // Returns the loss on the host (a GPU waits for it); dy = 2(y − t)/n.
  virtual float mse_loss(const float* y, const float* target, float* dy, std::size_t n) = 0;
  virtual void scale(float a, float* x, std::size_t n) = 0;
  // True when no element is inf or NaN (waits for the device).
  virtual bool all_finite(const float* x, std::size_t n) = 0;

  // y += a·x (the residual stream's additions).
  virtual void axpy(float a, const float* x, float* y, std::size_t n) = 0;
  // out = a + b: a copy and an axpy by default; the CPU's one pass (kernels::residual_add).
  virtual void residual_add(const float* a, const float* b, float* out, std::size_t n) {
    copy_bytes(out, a, n * sizeof(float));
    axpy(1.0f, b, out, n);
  }
  // x = 0 (every bit zero, whatever x held: not scale(0), which keeps a NaN).
  virtual void zero(float* x, std::size_t n) = 0;

  // The GPT's ops (kernels/cpu/transformer_kernels.h has the formulas; kernels/cuda/
  // transformer_kernels.cu the GPU twins). tokens are HOST pointers on every device: the
  // CUDA ops copy them to the device on the ops' stream (rows ints) before the kernel.
  virtual void layernorm_forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd,
                                 int rows, int width, float eps) = 0;
  virtual void layernorm_backward(const float* x, const float* w, const float* mean, const float* rstd, const float* dy,
                                  float* dx, float* dw, float* db, int rows, int width) = 0;
  virtual void attention_forward(const float* qkv, float* out, float* probs, const kernels::AttentionShape& s) = 0;
  virtual void attention_backward(const float* qkv, const float* probs, const float* dout, float* dqkv,
                                  const kernels::AttentionShape& s) = 0;
  virtual void embedding_forward(const int* tokens, const float* table, int vocab_begin, int vocab_local, float* out,
                                 int rows, int width) = 0;
  virtual void embedding_backward(const int* tokens, const float* dout, float* dtable, int vocab_begin, int vocab_local,
                                  int rows, int width) = 0;
  // Learned positions (the GPT's wpe), rows laid out [s][b]: x[j] += table[j / rows_per_position];
  // backward dtable[p] += the sum of position p's rows (kernels/cpu/transformer_kernels.h).
  virtual void position_forward(const float* table, float* x, int rows, int width, int rows_per_position) = 0;
  virtual void position_backward(const float* dx, float* dtable, int rows, int width, int rows_per_position) = 0;
  // The mean cross-entropy of softmax(logits) [rows × vocab] against `targets` (HOST ids,
  // as tokens), returned on the host; dlogits = (softmax − one-hot)/rows.
  virtual float softmax_cross_entropy(const float* logits, const int* targets, float* dlogits, int rows, int vocab) = 0;

  // 16-bit storage: widen to fp32, round back (to nearest even), optionally adding.
  virtual void to_float(const void* src, DType t, float* dst, std::size_t n) = 0;
  virtual void from_float(const float* src, void* dst, DType t, std::size_t n, bool accumulate) = 0;

  virtual void sgd_step(float* w, const float* g, std::size_t n, float lr) = 0;
  virtual void adamw_step(float* w, const float* g, float* m, float* v, std::size_t n, const kernels::AdamWConfig& c,
                          int t) = 0;
  // false (and nothing changed) when a gradient is inf/NaN: see kernels::adamw_step_mixed.
  virtual bool adamw_step_mixed(float* master, const void* grads, void* params, DType t, float* m, float* v,
                                std::size_t n, const kernels::AdamWConfig& c, int step, float inv_scale) = 0;
};

// Elements of a flat buffer (host or device, f32/bf16/f16) as fp32 on the host: what checks
// and reports read; `out` holds as many elements as are copied.
void copy_to_host_floats(const void* src, DType t, std::vector<float>& out);

// The ops for a device: the CPU's always; the stand-in's when it is installed as the
// device (core/memory/standin_device.h); a GPU's when this build has CUDA and a GPU is
// present (UsageError saying so otherwise).
TrainOps& train_ops(Device device);

// The stand-in device's ops (labs/train/train_ops_standin.cpp), and whether the stand-in
// is the installed device memory right now.
TrainOps& standin_train_ops(int index);
bool standin_device_installed();
// `--device standin`: the stand-in becomes this process's device memory.
void use_standin_device();

#if DTL_HAVE_CUDA
// The GPU ops of GPU `index` (labs/train/train_ops_cuda.cpp, built with CUDA only).
TrainOps& cuda_train_ops(int index);
#endif

}  // namespace dtl
