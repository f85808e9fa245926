// TrainOps on the host: the OpenBLAS GEMMs and vectorized loops of kernels/cpu.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/memory/device_ops.h"
#include "labs/train/op_profile.h"
#include "labs/train/train_ops.h"

namespace dtl {

namespace {

class CpuTrainOps final : public TrainOps {
 public:
  Device device() const override { return Device::cpu(); }
  void synchronize() override {}
  void linear_forward(const float* X, const float* W, const float* b, float* Y, int B, int I, int O) override {
    kernels::linear_forward(X, W, b, Y, B, I, O);
  }
  void linear_backward(const float* X, const float* W, const float* dY, float* dX, float* dW, float* db, int B, int I,
                       int O, bool accumulate) override {
    kernels::linear_backward(X, W, dY, dX, dW, db, B, I, O, accumulate);
  }
  void gelu_forward(const float* x, float* y, std::size_t n) override { kernels::gelu_forward(x, y, n); }
  void linear_gelu_forward(const float* X, const float* W, const float* b, float* pre, float* act, int B, int I,
                           int O) override {
    kernels::linear_gelu_forward(X, W, b, pre, act, B, I, O);
  }
  void gelu_backward(const float* x, const float* dy, float* dx, std::size_t n) override {
    kernels::gelu_backward(x, dy, dx, n);
  }
  float mse_loss(const float* y, const float* target, float* dy, std::size_t n) override {
    return kernels::mse_loss(y, target, dy, n);
  }
  void scale(float a, float* x, std::size_t n) override { kernels::scale(a, x, n); }
  bool all_finite(const float* x, std::size_t n) override {
    bool finite = true;
    for (std::size_t i = 0; i < n; ++i) finite &= std::isfinite(x[i]);  // no early exit: vectorizes
    return finite;
  }
  void axpy(float a, const float* x, float* y, std::size_t n) override { kernels::axpy(a, x, y, n); }
  void residual_add(const float* a, const float* b, float* out, std::size_t n) override {
    kernels::residual_add(a, b, out, n);
  }
  void zero(float* x, std::size_t n) override { std::fill_n(x, n, 0.0f); }
  void layernorm_forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd, int rows,
                         int width, float eps) override {
    kernels::layernorm_forward(x, w, b, y, mean, rstd, rows, width, eps);
  }
  void layernorm_backward(const float* x, const float* w, const float* mean, const float* rstd, const float* dy,
                          float* dx, float* dw, float* db, int rows, int width) override {
    kernels::layernorm_backward(x, w, mean, rstd, dy, dx, dw, db, rows, width);
  }
  void attention_forward(const float* qkv, float* out, float* probs, const kernels::AttentionShape& s) override {
    kernels::attention_forward(qkv, out, probs, s);
  }
  void attention_backward(const float* qkv, const float* probs, const float* dout, float* dqkv,
                          const kernels::AttentionShape& s) override {
    kernels::attention_backward(qkv, probs, dout, dqkv, s);
  }
  void embedding_forward(const int* tokens, const float* table, int vocab_begin, int vocab_local, float* out, int rows,
                         int width) override {
    kernels::embedding_forward(tokens, table, vocab_begin, vocab_local, out, rows, width);
  }
  void embedding_backward(const int* tokens, const float* dout, float* dtable, int vocab_begin, int vocab_local,
                          int rows, int width) override {
    kernels::embedding_backward(tokens, dout, dtable, vocab_begin, vocab_local, rows, width);
  }
  void position_forward(const float* table, float* x, int rows, int width, int rows_per_position) override {
    kernels::position_forward(table, x, rows, width, rows_per_position);
  }
  void position_backward(const float* dx, float* dtable, int rows, int width, int rows_per_position) override {
    kernels::position_backward(dx, dtable, rows, width, rows_per_position);
  }
  float softmax_cross_entropy(const float* logits, const int* targets, float* dlogits, int rows, int vocab) override {
    return kernels::softmax_cross_entropy(logits, targets, dlogits, rows, vocab);
  }
  void to_float(const void* src, DType t, float* dst, std::size_t n) override { dtl::to_float(src, t, dst, n); }
  void from_float(const float* src, void* dst, DType t, std::size_t n, bool accumulate) override {
    dtl::from_float(src, dst, t, n, accumulate);
  }
  void sgd_step(float* w, const float* g, std::size_t n, float lr) override { kernels::sgd_step(w, g, n, lr); }
  void adamw_step(float* w, const float* g, float* m, float* v, std::size_t n, const kernels::AdamWConfig& c,
                  int t) override {
    kernels::adamw_step(w, g, m, v, n, c, t);
  }
  bool adamw_step_mixed(float* master, const void* grads, void* params, DType t, float* m, float* v, std::size_t n,
                        const kernels::AdamWConfig& c, int step, float inv_scale) override {
    return kernels::adamw_step_mixed(master, grads, params, t, m, v, n, c, step, inv_scale);
  }
};

}  // namespace

void copy_to_host_floats(const void* src, DType t, std::vector<float>& out) {
  std::vector<std::byte> raw(out.size() * dtype_size(t));
  copy_bytes(raw.data(), src, raw.size());  // from wherever src lives
  dtl::to_float(raw.data(), t, out.data(), out.size());
}

TrainOps& train_ops(Device device) {
  static CpuTrainOps cpu;
  if (device.kind == Device::Kind::cpu) {
    TrainOps* profiled = profiled_cpu_ops(cpu);  // while `dtlab bench-step --profile-ops` measures (op_profile.h)
    return profiled ? *profiled : cpu;
  }
  if (standin_device_installed()) return standin_train_ops(device.index);
#if DTL_HAVE_CUDA
  return cuda_train_ops(device.index);
#else
  throw UsageError("this dtlab was built without CUDA: the model cannot run on " + device.name() +
                   "; use --device cpu, or build where the CUDA toolkit is installed");
#endif
}

}  // namespace dtl
