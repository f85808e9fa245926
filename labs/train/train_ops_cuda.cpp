// TrainOps on a GPU: cuBLAS GEMMs and the CUDA kernels of kernels/cuda, queued on the
// calling thread's stream of that GPU (kernels/cuda/thread_stream.h), the stream DeviceOps
// uses too. Built only with CUDA.
#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/cuda/check.h"
#include "kernels/cpu/transformer_kernels.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/thread_stream.h"
#include "labs/train/train_ops.h"

namespace dtl {

namespace {

// Device scratch of one thread on one GPU: the attention backward's dP/dS and the
// embedding's token ids, one buffer used by one call at a time (the stream orders them).
// Per thread because one CudaTrainOps serves every thread rank of a GPU, each on its own
// stream. Allocated with cudaMalloc on first use and when a call needs more (never per
// call in steady state: the GPT asks for the same sizes every step), freed when the
// thread ends (unchecked: at process exit CUDA may be gone already).
struct Workspace {
  void* ptr = nullptr;
  std::size_t bytes = 0;
};
struct ThreadWorkspaces {
  std::map<int, Workspace> by_device;
  ~ThreadWorkspaces() {
    for (auto& [device, w] : by_device) (void)cudaFree(w.ptr);
  }
};

class CudaTrainOps final : public TrainOps {
 public:
  explicit CudaTrainOps(int index) : index_(index) {}
  Device device() const override { return Device::cuda(index_); }
  // An error of a kernel queued earlier surfaces here: say which operation was queued last.
  void synchronize() override {
    const cudaError_t e = cudaStreamSynchronize(stream());
    if (e != cudaSuccess)
      throw Error(std::string("GPU ") + std::to_string(index_) + ": " + cudaGetErrorName(e) + " (" +
                  cudaGetErrorString(e) +
                  ") surfaced at a synchronize; the last operation this thread queued there was " + last_op());
  }

  void linear_forward(const float* X, const float* W, const float* b, float* Y, int B, int I, int O) override {
    cuda::linear_forward(blas(), X, W, b, Y, B, I, O, stream("linear_forward"));
  }
  void linear_backward(const float* X, const float* W, const float* dY, float* dX, float* dW, float* db, int B, int I,
                       int O, bool accumulate) override {
    cuda::linear_backward(blas(), X, W, dY, dX, dW, db, B, I, O, accumulate, stream("linear_backward"));
  }
  void gelu_forward(const float* x, float* y, std::size_t n) override {
    cuda::gelu_forward(x, y, n, stream("gelu_forward"));
  }
  void gelu_backward(const float* x, const float* dy, float* dx, std::size_t n) override {
    cuda::gelu_backward(x, dy, dx, n, stream("gelu_backward"));
  }
  float mse_loss(const float* y, const float* target, float* dy, std::size_t n) override {
    return cuda::mse_loss(y, target, dy, n, stream("mse_loss"));
  }
  void scale(float a, float* x, std::size_t n) override { cuda::scale(a, x, n, stream("scale")); }
  bool all_finite(const float* x, std::size_t n) override { return cuda::all_finite(x, n, stream("all_finite")); }
  void to_float(const void* src, DType t, float* dst, std::size_t n) override {
    cuda::to_float(src, t, dst, n, stream("to_float"));
  }
  void from_float(const float* src, void* dst, DType t, std::size_t n, bool accumulate) override {
    cuda::from_float(src, dst, t, n, accumulate, stream("from_float"));
  }
  void sgd_step(float* w, const float* g, std::size_t n, float lr) override {
    cuda::sgd_step(w, g, n, lr, stream("sgd_step"));
  }
  void adamw_step(float* w, const float* g, float* m, float* v, std::size_t n, const kernels::AdamWConfig& c,
                  int t) override {
    cuda::adamw_step(w, g, m, v, n, c, t, stream("adamw_step"));
  }
  bool adamw_step_mixed(float* master, const void* grads, void* params, DType t, float* m, float* v, std::size_t n,
                        const kernels::AdamWConfig& c, int step, float inv_scale) override {
    return cuda::adamw_step_mixed(master, grads, params, t, m, v, n, c, step, inv_scale, stream("adamw_step_mixed"));
  }

  void axpy(float a, const float* x, float* y, std::size_t n) override { cuda::axpy(a, x, y, n, stream("axpy")); }

  void zero(float* x, std::size_t n) override {
    if (n) DTL_CUDA_CHECK(cudaMemsetAsync(x, 0, n * sizeof(float), stream("zero")));
  }

  // The GPT's ops: kernels/cuda/transformer_kernels.cu.
  void layernorm_forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd, int rows,
                         int width, float eps) override {
    cuda::layernorm_forward(x, w, b, y, mean, rstd, rows, width, eps, stream("layernorm_forward"));
  }
  void layernorm_backward(const float* x, const float* w, const float* mean, const float* rstd, const float* dy,
                          float* dx, float* dw, float* db, int rows, int width) override {
    cuda::layernorm_backward(x, w, mean, rstd, dy, dx, dw, db, rows, width, stream("layernorm_backward"));
  }
  void attention_forward(const float* qkv, float* out, float* probs, const kernels::AttentionShape& s) override {
    cuda::attention_forward(blas(), qkv, out, probs, s, stream("attention_forward"));
  }
  void attention_backward(const float* qkv, const float* probs, const float* dout, float* dqkv,
                          const kernels::AttentionShape& s) override {
    float* scratch = static_cast<float*>(workspace(cuda::attention_backward_scratch_floats(s) * sizeof(float)));
    cuda::attention_backward(blas(), qkv, probs, dout, dqkv, scratch, s, stream("attention_backward"));
  }
  // tokens are host ids (train_ops.h): copied into the workspace, then looked up there.
  void embedding_forward(const int* tokens, const float* table, int vocab_begin, int vocab_local, float* out, int rows,
                         int width) override {
    cuda::embedding_forward(device_tokens(tokens, rows), table, vocab_begin, vocab_local, out, rows, width,
                            stream("embedding_forward"));
  }
  void embedding_backward(const int* tokens, const float* dout, float* dtable, int vocab_begin, int vocab_local,
                          int rows, int width) override {
    if (rows <= 0) return;
    // The tokens and their rows sorted by token, side by side in the workspace (one copy).
    std::vector<int> both(tokens, tokens + rows);
    const std::vector<int> order = kernels::rows_by_token(tokens, rows);
    both.insert(both.end(), order.begin(), order.end());
    const int* d = device_tokens(both.data(), 2 * rows);
    cuda::embedding_backward(d, d + rows, dout, dtable, vocab_begin, vocab_local, rows, width,
                             stream("embedding_backward"));
  }
  void position_forward(const float* table, float* x, int rows, int width, int rows_per_position) override {
    cuda::position_forward(table, x, rows, width, rows_per_position, stream("position_forward"));
  }
  void position_backward(const float* dx, float* dtable, int rows, int width, int rows_per_position) override {
    cuda::position_backward(dx, dtable, rows, width, rows_per_position, stream("position_backward"));
  }
  float softmax_cross_entropy(const float* logits, const int* targets, float* dlogits, int rows, int vocab) override {
    return cuda::softmax_cross_entropy(logits, device_tokens(targets, rows), dlogits, rows, vocab,
                                       stream("softmax_cross_entropy"));
  }

 private:
  cudaStream_t stream() const { return cuda::this_thread_stream(index_); }
  // The stream, noting which operation is being queued (for the message of a later error).
  cudaStream_t stream(const char* op) const {
    last_op() = op;
    return stream();
  }
  static const char*& last_op() {
    thread_local const char* op = "nothing yet";
    return op;
  }
  cublasHandle_t blas() const { return cuda::this_thread_blas(index_); }
  // This thread's workspace on this GPU, at least `bytes` long (see ThreadWorkspaces).
  void* workspace(std::size_t bytes) {
    thread_local ThreadWorkspaces spaces;
    const cudaStream_t s = stream();  // selects the device too
    Workspace& w = spaces.by_device[index_];
    if (w.bytes < bytes) {
      DTL_CUDA_CHECK(cudaStreamSynchronize(s));  // earlier calls on the stream may still use the old one
      if (w.ptr) DTL_CUDA_CHECK(cudaFree(w.ptr));
      w.ptr = nullptr;
      w.bytes = 0;
      DTL_CUDA_CHECK(cudaMalloc(&w.ptr, bytes));
      w.bytes = bytes;
    }
    return w.ptr;
  }
  // The host token ids in the workspace, copied on the stream. From pageable memory the
  // copy is staged before cudaMemcpyAsync returns, so the caller may reuse `tokens` at once.
  const int* device_tokens(const int* tokens, int rows) {
    if (rows <= 0) return nullptr;
    const std::size_t bytes = std::size_t(rows) * sizeof(int);
    int* d = static_cast<int*>(workspace(bytes));
    DTL_CUDA_CHECK(cudaMemcpyAsync(d, tokens, bytes, cudaMemcpyHostToDevice, stream()));
    return d;
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
