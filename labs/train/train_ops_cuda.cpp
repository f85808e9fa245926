// TrainOps on a GPU: cuBLAS GEMMs and the CUDA kernels of kernels/cuda, queued on the
// calling thread's stream of that GPU (kernels/cuda/thread_stream.h), the stream DeviceOps
// uses too. Built only with CUDA.
#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/cuda/check.h"
#include "core/error.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/thread_stream.h"
#include "labs/train/train_ops.h"

namespace dtl {

namespace {

class CudaTrainOps final : public TrainOps {
 public:
  explicit CudaTrainOps(int index) : index_(index) {}
  Device device() const override { return Device::cuda(index_); }
  void synchronize() override { DTL_CUDA_CHECK(cudaStreamSynchronize(stream())); }

  void linear_forward(const float* X, const float* W, const float* b, float* Y, int B, int I, int O) override {
    cuda::linear_forward(blas(), X, W, b, Y, B, I, O, stream());
  }
  void linear_backward(const float* X, const float* W, const float* dY, float* dX, float* dW, float* db, int B, int I,
                       int O, bool accumulate) override {
    cuda::linear_backward(blas(), X, W, dY, dX, dW, db, B, I, O, accumulate, stream());
  }
  void gelu_forward(const float* x, float* y, std::size_t n) override { cuda::gelu_forward(x, y, n, stream()); }
  void gelu_backward(const float* x, const float* dy, float* dx, std::size_t n) override {
    cuda::gelu_backward(x, dy, dx, n, stream());
  }
  float mse_loss(const float* y, const float* target, float* dy, std::size_t n) override {
    return cuda::mse_loss(y, target, dy, n, stream());
  }
  void scale(float a, float* x, std::size_t n) override { cuda::scale(a, x, n, stream()); }
  bool all_finite(const float* x, std::size_t n) override { return cuda::all_finite(x, n, stream()); }
  void to_float(const void* src, DType t, float* dst, std::size_t n) override { cuda::to_float(src, t, dst, n, stream()); }
  void from_float(const float* src, void* dst, DType t, std::size_t n, bool accumulate) override {
    cuda::from_float(src, dst, t, n, accumulate, stream());
  }
  void sgd_step(float* w, const float* g, std::size_t n, float lr) override { cuda::sgd_step(w, g, n, lr, stream()); }
  void adamw_step(float* w, const float* g, float* m, float* v, std::size_t n, const kernels::AdamWConfig& c,
                  int t) override {
    cuda::adamw_step(w, g, m, v, n, c, t, stream());
  }
  bool adamw_step_mixed(float* master, const void* grads, void* params, DType t, float* m, float* v, std::size_t n,
                        const kernels::AdamWConfig& c, int step, float inv_scale) override {
    return cuda::adamw_step_mixed(master, grads, params, t, m, v, n, c, step, inv_scale, stream());
  }

  void axpy(float a, const float* x, float* y, std::size_t n) override { cuda::axpy(a, x, y, n, stream()); }

  // The GPT's ops have no CUDA kernels yet (kernels/cpu/transformer_kernels.h has the CPU ones).
  void layernorm_forward(const float*, const float*, const float*, float*, float*, float*, int, int, float) override {
    not_yet("layernorm_forward");
  }
  void layernorm_backward(const float*, const float*, const float*, const float*, const float*, float*, float*, float*,
                          int, int) override {
    not_yet("layernorm_backward");
  }
  void attention_forward(const float*, float*, float*, const kernels::AttentionShape&) override {
    not_yet("attention_forward");
  }
  void attention_backward(const float*, const float*, const float*, float*, const kernels::AttentionShape&) override {
    not_yet("attention_backward");
  }
  void embedding_forward(const int*, const float*, int, int, float*, int, int) override { not_yet("embedding_forward"); }
  void embedding_backward(const int*, const float*, float*, int, int, int, int) override {
    not_yet("embedding_backward");
  }

 private:
  cudaStream_t stream() const { return cuda::this_thread_stream(index_); }
  cublasHandle_t blas() const { return cuda::this_thread_blas(index_); }
  [[noreturn]] static void not_yet(const char* op) {
    throw UsageError(std::string(op) + " is not implemented on CUDA yet: run the GPT on the CPU");
  }
  int index_;
};

}  // namespace

TrainOps& cuda_train_ops(int index) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<CudaTrainOps>> by_device;  // stateless but for the index
  std::lock_guard<std::mutex> lock(mutex);
  auto& ops = by_device[index];
  if (!ops) ops = std::make_unique<CudaTrainOps>(index);
  return *ops;
}

}  // namespace dtl
