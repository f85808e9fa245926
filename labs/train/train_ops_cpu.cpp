// TrainOps on the host: the OpenBLAS GEMMs and vectorized loops of kernels/cpu.
#include <cmath>

#include "core/error.h"
#include "core/memory/device_ops.h"
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
  void gelu_backward(const float* x, const float* dy, float* dx, std::size_t n) override {
    kernels::gelu_backward(x, dy, dx, n);
  }
  float mse_loss(const float* y, const float* target, float* dy, std::size_t n) override {
    return kernels::mse_loss(y, target, dy, n);
  }
  void scale(float a, float* x, std::size_t n) override { kernels::scale(a, x, n); }
  void axpy(float a, const float* x, float* y, std::size_t n) override { kernels::axpy(a, x, y, n); }
  bool all_finite(const float* x, std::size_t n) override {
    bool finite = true;
    for (std::size_t i = 0; i < n; ++i) finite &= std::isfinite(x[i]);  // no early exit: vectorizes
    return finite;
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
  if (device.kind == Device::Kind::cpu) return cpu;
#if DTL_HAVE_CUDA
  return cuda_train_ops(device.index);
#else
  throw UsageError("this dtlab was built without CUDA: the model cannot run on " + device.name() +
                   "; use --device cpu, or build where the CUDA toolkit is installed");
#endif
}

}  // namespace dtl
