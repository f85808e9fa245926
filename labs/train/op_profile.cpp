#include "labs/train/op_profile.h"

#include <chrono>
#include <memory>
#include <utility>

#include "core/error.h"
#include "labs/train/train_ops.h"

namespace dtl {

namespace {

OpProfile* installed = nullptr;

constexpr double kF = sizeof(float);

// Every call forwarded to the CPU ops, timed, its work counted (op_profile.h).
class ProfiledTrainOps final : public TrainOps {
 private:  // (first: the methods below use them)
  // The causal half a query-key product needs: query i meets keys 0 … i, S(S+1)/2 pairs per
  // head (a kernel that computes the masked half too does more work than it is credited).
  static double attention_macs(const kernels::AttentionShape& s) {
    return double(s.batch) * s.heads * double(s.seq) * (s.seq + 1) / 2 * s.head_dim;
  }
  // qkv in, out (and the S×S probabilities) written; `passes` over the probabilities.
  static double attention_bytes(const kernels::AttentionShape& s, int passes) {
    const double rows = double(s.seq) * s.batch, width = double(s.heads) * s.head_dim;
    return kF * (4 * rows * width + passes * double(s.batch) * s.heads * double(s.seq) * s.seq);
  }
  template <class Fn>
  auto timed(const char* name, double flops, double bytes, Fn&& fn) {
    OpStats& st = profile_.ops[name];
    ++st.calls;
    st.flops += flops;
    st.bytes += bytes;
    const auto t0 = std::chrono::steady_clock::now();
    struct AddTime {  // also when fn returns a value
      OpStats& st;
      std::chrono::steady_clock::time_point t0;
      ~AddTime() { st.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
    } add{st, t0};
    return fn();
  }

 public:
  ProfiledTrainOps(TrainOps& inner, OpProfile& profile) : in_(inner), profile_(profile) {}
  Device device() const override { return in_.device(); }
  void synchronize() override { in_.synchronize(); }

  // Y = X·Wᵀ + b: 2·B·I·O FLOPs; backward twice that with dX (dX = dY·W, dW = dYᵀ·X).
  void linear_forward(const float* X, const float* W, const float* b, float* Y, int B, int I, int O) override {
    timed("linear_forward", 2.0 * B * I * O, kF * (double(B) * I + double(I) * O + 2.0 * B * O),
          [&] { in_.linear_forward(X, W, b, Y, B, I, O); });
  }
  void linear_backward(const float* X, const float* W, const float* dY, float* dX, float* dW, float* db, int B, int I,
                       int O, bool accumulate) override {
    const double gemms = dX ? 2 : 1;
    timed("linear_backward", gemms * 2.0 * B * I * O, kF * (2.0 * B * I + 2.0 * I * O + double(B) * O),
          [&] { in_.linear_backward(X, W, dY, dX, dW, db, B, I, O, accumulate); });
  }
  void linear_gelu_forward(const float* X, const float* W, const float* b, float* pre, float* act, int B, int I,
                           int O) override {
    timed("linear_gelu_forward", 2.0 * B * I * O, kF * (double(B) * I + double(I) * O + 3.0 * B * O),
          [&] { in_.linear_gelu_forward(X, W, b, pre, act, B, I, O); });
  }
  void gelu_forward(const float* x, float* y, std::size_t n) override {
    timed("gelu_forward", 0, 2 * kF * double(n), [&] { in_.gelu_forward(x, y, n); });
  }
  void gelu_backward(const float* x, const float* dy, float* dx, std::size_t n) override {
    timed("gelu_backward", 0, 3 * kF * double(n), [&] { in_.gelu_backward(x, dy, dx, n); });
  }
  float mse_loss(const float* y, const float* target, float* dy, std::size_t n) override {
    return timed("mse_loss", 0, 3 * kF * double(n), [&] { return in_.mse_loss(y, target, dy, n); });
  }
  void scale(float a, float* x, std::size_t n) override {
    timed("scale", 0, 2 * kF * double(n), [&] { in_.scale(a, x, n); });
  }
  bool all_finite(const float* x, std::size_t n) override {
    return timed("all_finite", 0, kF * double(n), [&] { return in_.all_finite(x, n); });
  }
  void axpy(float a, const float* x, float* y, std::size_t n) override {
    timed("axpy", 0, 3 * kF * double(n), [&] { in_.axpy(a, x, y, n); });
  }
  void residual_add(const float* a, const float* b, float* out, std::size_t n) override {
    timed("residual_add", 0, 3 * kF * double(n), [&] { in_.residual_add(a, b, out, n); });
  }
  void zero(float* x, std::size_t n) override {
    timed("zero", 0, kF * double(n), [&] { in_.zero(x, n); });
  }
  void layernorm_forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd, int rows,
                         int width, float eps) override {
    timed("layernorm_forward", 0, 2 * kF * double(rows) * width,
          [&] { in_.layernorm_forward(x, w, b, y, mean, rstd, rows, width, eps); });
  }
  void layernorm_backward(const float* x, const float* w, const float* mean, const float* rstd, const float* dy,
                          float* dx, float* dw, float* db, int rows, int width) override {
    timed("layernorm_backward", 0, 3 * kF * double(rows) * width,
          [&] { in_.layernorm_backward(x, w, mean, rstd, dy, dx, dw, db, rows, width); });
  }
  // Causal attention computes the whole S×S score matrix here: Q·Kᵀ and P·V, 2·B·A·S²·d each.
  void attention_forward(const float* qkv, float* out, float* probs, const kernels::AttentionShape& s) override {
    timed("attention_forward", 4.0 * attention_macs(s), attention_bytes(s, 2),
          [&] { in_.attention_forward(qkv, out, probs, s); });
  }
  void attention_backward(const float* qkv, const float* probs, const float* dout, float* dqkv,
                          const kernels::AttentionShape& s) override {
    timed("attention_backward", 8.0 * attention_macs(s), attention_bytes(s, 3),
          [&] { in_.attention_backward(qkv, probs, dout, dqkv, s); });
  }
  void embedding_forward(const int* tokens, const float* table, int vocab_begin, int vocab_local, float* out, int rows,
                         int width) override {
    timed("embedding_forward", 0, 2 * kF * double(rows) * width,
          [&] { in_.embedding_forward(tokens, table, vocab_begin, vocab_local, out, rows, width); });
  }
  void embedding_backward(const int* tokens, const float* dout, float* dtable, int vocab_begin, int vocab_local,
                          int rows, int width) override {
    timed("embedding_backward", 0, 3 * kF * double(rows) * width,
          [&] { in_.embedding_backward(tokens, dout, dtable, vocab_begin, vocab_local, rows, width); });
  }
  void position_forward(const float* table, float* x, int rows, int width, int rows_per_position) override {
    timed("position_forward", 0, 3 * kF * double(rows) * width,
          [&] { in_.position_forward(table, x, rows, width, rows_per_position); });
  }
  void position_backward(const float* dx, float* dtable, int rows, int width, int rows_per_position) override {
    timed("position_backward", 0, 2 * kF * double(rows) * width,
          [&] { in_.position_backward(dx, dtable, rows, width, rows_per_position); });
  }
  float softmax_cross_entropy(const float* logits, const int* targets, float* dlogits, int rows, int vocab) override {
    return timed("softmax_cross_entropy", 0, 2 * kF * double(rows) * vocab,
                 [&] { return in_.softmax_cross_entropy(logits, targets, dlogits, rows, vocab); });
  }
  void to_float(const void* src, DType t, float* dst, std::size_t n) override {
    timed("to_float", 0, double(n) * (double(dtype_size(t)) + kF), [&] { in_.to_float(src, t, dst, n); });
  }
  void from_float(const float* src, void* dst, DType t, std::size_t n, bool accumulate) override {
    timed("from_float", 0, double(n) * (double(dtype_size(t)) + kF),
          [&] { in_.from_float(src, dst, t, n, accumulate); });
  }
  void sgd_step(float* w, const float* g, std::size_t n, float lr) override {
    timed("sgd_step", 0, 3 * kF * double(n), [&] { in_.sgd_step(w, g, n, lr); });
  }
  // AdamW reads w, g, m, v and writes w, m, v: 7 floats per parameter.
  void adamw_step(float* w, const float* g, float* m, float* v, std::size_t n, const kernels::AdamWConfig& c,
                  int t) override {
    timed("adamw_step", 0, 7 * kF * double(n), [&] { in_.adamw_step(w, g, m, v, n, c, t); });
  }
  bool adamw_step_mixed(float* master, const void* grads, void* params, DType t, float* m, float* v, std::size_t n,
                        const kernels::AdamWConfig& c, int step, float inv_scale) override {
    return timed("adamw_step_mixed", 0, double(n) * (7 * kF + 2.0 * double(dtype_size(t))),
                 [&] { return in_.adamw_step_mixed(master, grads, params, t, m, v, n, c, step, inv_scale); });
  }

 private:
  TrainOps& in_;
  OpProfile& profile_;
};

std::unique_ptr<ProfiledTrainOps>& decorator() {
  static std::unique_ptr<ProfiledTrainOps> d;
  return d;
}

}  // namespace

ScopedOpProfile::ScopedOpProfile(OpProfile& profile) {
  if (installed) throw Error("an op profile is installed already: one at a time");
  installed = &profile;
}

ScopedOpProfile::~ScopedOpProfile() {
  installed = nullptr;
  decorator().reset();
}

TrainOps* profiled_cpu_ops(TrainOps& cpu) {
  if (!installed) return nullptr;
  if (!decorator()) decorator() = std::make_unique<ProfiledTrainOps>(cpu, *installed);
  return decorator().get();
}

}  // namespace dtl
