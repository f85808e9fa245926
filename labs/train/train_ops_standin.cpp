// TrainOps on the stand-in device (core/memory/standin_device.h): the CPU kernels of
// kernels/cpu run on decoded copies of device buffers, queued on the calling thread's
// stream as CUDA kernels are. The model and optimizer code cannot tell it from a GPU,
// except that every mistake a GPU would punish is punished here too, and deterministically:
// a host pointer given to a kernel throws at the call, a result read from the host before
// synchronize() is stale or garbage.
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/memory/standin_device.h"
#include "labs/train/train_ops.h"

namespace dtl {

namespace {

// One buffer argument of a kernel: device memory of `bytes`, read and/or written.
struct Arg {
  const void* device;
  std::size_t bytes;
  bool written;
  const char* name;
};

class StandInTrainOps final : public TrainOps {
 public:
  explicit StandInTrainOps(int index) : index_(index) {}
  Device device() const override { return Device::cuda(index_); }
  void synchronize() override { dev().drain_this_thread(); }

  void linear_forward(const float* X, const float* W, const float* b, float* Y, int B, int I, int O) override {
    launch("linear_forward", {in(X, B * I, "X"), in(W, O * I, "W"), in(b, O, "b"), out(Y, B * O, "Y")},
           [=](auto& h) { cpu().linear_forward(f(h[0]), f(h[1]), f(h[2]), f(h[3]), B, I, O); });
  }
  void linear_backward(const float* X, const float* W, const float* dY, float* dX, float* dW, float* db, int B, int I,
                       int O, bool accumulate) override {
    launch("linear_backward",
           {in(X, B * I, "X"), in(W, O * I, "W"), in(dY, B * O, "dY"), out(dX, B * I, "dX"), out(dW, O * I, "dW"),
            out(db, O, "db")},
           [=](auto& h) {
             cpu().linear_backward(f(h[0]), f(h[1]), f(h[2]), f(h[3]), f(h[4]), f(h[5]), B, I, O, accumulate);
           });
  }
  void gelu_forward(const float* x, float* y, std::size_t n) override {
    launch("gelu_forward", {in(x, n, "x"), out(y, n, "y")}, [=](auto& h) { cpu().gelu_forward(f(h[0]), f(h[1]), n); });
  }
  void gelu_backward(const float* x, const float* dy, float* dx, std::size_t n) override {
    launch("gelu_backward", {in(x, n, "x"), in(dy, n, "dy"), out(dx, n, "dx")},
           [=](auto& h) { cpu().gelu_backward(f(h[0]), f(h[1]), f(h[2]), n); });
  }
  float mse_loss(const float* y, const float* target, float* dy, std::size_t n) override {
    float loss = 0;
    launch_and_wait("mse_loss", {in(y, n, "y"), in(target, n, "target"), out(dy, n, "dy")},
                    [&](auto& h) { loss = cpu().mse_loss(f(h[0]), f(h[1]), f(h[2]), n); });
    return loss;
  }
  void scale(float a, float* x, std::size_t n) override {
    launch("scale", {out(x, n, "x")}, [=](auto& h) { cpu().scale(a, f(h[0]), n); });
  }
  bool all_finite(const float* x, std::size_t n) override {
    bool finite = true;
    launch_and_wait("all_finite", {in(x, n, "x")}, [&](auto& h) { finite = cpu().all_finite(f(h[0]), n); });
    return finite;
  }
  void axpy(float a, const float* x, float* y, std::size_t n) override {
    launch("axpy", {in(x, n, "x"), out(y, n, "y")}, [=](auto& h) { cpu().axpy(a, f(h[0]), f(h[1]), n); });
  }
  void zero(float* x, std::size_t n) override {
    launch("zero", {out(x, n, "x")}, [=](auto& h) { cpu().zero(f(h[0]), n); });
  }
  void layernorm_forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd, int rows,
                         int width, float eps) override {
    const std::size_t n = std::size_t(rows) * std::size_t(width);
    launch("layernorm_forward",
           {in(x, n, "x"), in(w, width, "w"), in(b, width, "b"), out(y, n, "y"), out(mean, rows, "mean"),
            out(rstd, rows, "rstd")},
           [=](auto& h) {
             cpu().layernorm_forward(f(h[0]), f(h[1]), f(h[2]), f(h[3]), f(h[4]), f(h[5]), rows, width, eps);
           });
  }
  void layernorm_backward(const float* x, const float* w, const float* mean, const float* rstd, const float* dy,
                          float* dx, float* dw, float* db, int rows, int width) override {
    const std::size_t n = std::size_t(rows) * std::size_t(width);
    launch("layernorm_backward",
           {in(x, n, "x"), in(w, width, "w"), in(mean, rows, "mean"), in(rstd, rows, "rstd"), in(dy, n, "dy"),
            out(dx, n, "dx"), out(dw, width, "dw"), out(db, width, "db")},
           [=](auto& h) {
             cpu().layernorm_backward(f(h[0]), f(h[1]), f(h[2]), f(h[3]), f(h[4]), f(h[5]), f(h[6]), f(h[7]), rows,
                                      width);
           });
  }
  void attention_forward(const float* qkv, float* o, float* probs, const kernels::AttentionShape& s) override {
    const std::size_t rows = std::size_t(s.seq) * std::size_t(s.batch),
                      hd = std::size_t(s.heads) * std::size_t(s.head_dim);
    const std::size_t p = std::size_t(s.batch) * std::size_t(s.heads) * std::size_t(s.seq) * std::size_t(s.seq);
    launch("attention_forward", {in(qkv, rows * 3 * hd, "qkv"), out(o, rows * hd, "out"), out(probs, p, "probs")},
           [=](auto& h) { cpu().attention_forward(f(h[0]), f(h[1]), f(h[2]), s); });
  }
  void attention_backward(const float* qkv, const float* probs, const float* dout, float* dqkv,
                          const kernels::AttentionShape& s) override {
    const std::size_t rows = std::size_t(s.seq) * std::size_t(s.batch),
                      hd = std::size_t(s.heads) * std::size_t(s.head_dim);
    const std::size_t p = std::size_t(s.batch) * std::size_t(s.heads) * std::size_t(s.seq) * std::size_t(s.seq);
    launch("attention_backward",
           {in(qkv, rows * 3 * hd, "qkv"), in(probs, p, "probs"), in(dout, rows * hd, "dout"),
            out(dqkv, rows * 3 * hd, "dqkv")},
           [=](auto& h) { cpu().attention_backward(f(h[0]), f(h[1]), f(h[2]), f(h[3]), s); });
  }
  // tokens are host memory on every device (train_ops.h): copied now, as the CUDA ops copy
  // them onto the stream before the kernel.
  void embedding_forward(const int* tokens, const float* table, int vocab_begin, int vocab_local, float* o, int rows,
                         int width) override {
    auto ids = std::make_shared<std::vector<int>>(tokens, tokens + rows);
    const std::size_t n = std::size_t(rows) * std::size_t(width);
    launch("embedding_forward", {in(table, std::size_t(vocab_local) * std::size_t(width), "table"), out(o, n, "out")},
           [=](auto& h) {
             cpu().embedding_forward(ids->data(), f(h[0]), vocab_begin, vocab_local, f(h[1]), rows, width);
           });
  }
  void embedding_backward(const int* tokens, const float* dout, float* dtable, int vocab_begin, int vocab_local,
                          int rows, int width) override {
    auto ids = std::make_shared<std::vector<int>>(tokens, tokens + rows);
    const std::size_t n = std::size_t(rows) * std::size_t(width);
    launch("embedding_backward",
           {in(dout, n, "dout"), out(dtable, std::size_t(vocab_local) * std::size_t(width), "dtable")}, [=](auto& h) {
             cpu().embedding_backward(ids->data(), f(h[0]), f(h[1]), vocab_begin, vocab_local, rows, width);
           });
  }
  void position_forward(const float* table, float* x, int rows, int width, int rows_per_position) override {
    const std::size_t n = std::size_t(rows) * std::size_t(width);
    const std::size_t positions =
        (std::size_t(rows) + std::size_t(rows_per_position) - 1) / std::size_t(rows_per_position);
    launch("position_forward", {in(table, positions * std::size_t(width), "table"), out(x, n, "x")},
           [=](auto& h) { cpu().position_forward(f(h[0]), f(h[1]), rows, width, rows_per_position); });
  }
  void position_backward(const float* dx, float* dtable, int rows, int width, int rows_per_position) override {
    const std::size_t n = std::size_t(rows) * std::size_t(width);
    const std::size_t positions =
        (std::size_t(rows) + std::size_t(rows_per_position) - 1) / std::size_t(rows_per_position);
    launch("position_backward", {in(dx, n, "dx"), out(dtable, positions * std::size_t(width), "dtable")},
           [=](auto& h) { cpu().position_backward(f(h[0]), f(h[1]), rows, width, rows_per_position); });
  }
  float softmax_cross_entropy(const float* logits, const int* targets, float* dlogits, int rows, int vocab) override {
    const std::vector<int> ids(targets, targets + rows);  // host ids, as tokens
    const std::size_t n = std::size_t(rows) * std::size_t(vocab);
    float loss = 0;
    launch_and_wait("softmax_cross_entropy", {in(logits, n, "logits"), out(dlogits, n, "dlogits")},
                    [&](auto& h) { loss = cpu().softmax_cross_entropy(f(h[0]), ids.data(), f(h[1]), rows, vocab); });
    return loss;
  }
  void to_float(const void* src, DType t, float* dst, std::size_t n) override {
    launch("to_float", {{src, n * dtype_size(t), false, "src"}, out(dst, n, "dst")},
           [=](auto& h) { cpu().to_float(h[0], t, f(h[1]), n); });
  }
  void from_float(const float* src, void* dst, DType t, std::size_t n, bool accumulate) override {
    launch("from_float", {in(src, n, "src"), {dst, n * dtype_size(t), true, "dst"}},
           [=](auto& h) { cpu().from_float(f(h[0]), h[1], t, n, accumulate); });
  }
  void sgd_step(float* w, const float* g, std::size_t n, float lr) override {
    launch("sgd_step", {out(w, n, "w"), in(g, n, "g")}, [=](auto& h) { cpu().sgd_step(f(h[0]), f(h[1]), n, lr); });
  }
  void adamw_step(float* w, const float* g, float* m, float* v, std::size_t n, const kernels::AdamWConfig& c,
                  int t) override {
    launch("adamw_step", {out(w, n, "w"), in(g, n, "g"), out(m, n, "m"), out(v, n, "v")},
           [=](auto& h) { cpu().adamw_step(f(h[0]), f(h[1]), f(h[2]), f(h[3]), n, c, t); });
  }
  bool adamw_step_mixed(float* master, const void* grads, void* params, DType t, float* m, float* v, std::size_t n,
                        const kernels::AdamWConfig& c, int step, float inv_scale) override {
    bool applied = false;
    launch_and_wait("adamw_step_mixed",
                    {out(master, n, "master"),
                     {grads, n * dtype_size(t), false, "grads"},
                     {params, n * dtype_size(t), true, "params"},
                     out(m, n, "m"),
                     out(v, n, "v")},
                    [&](auto& h) {
                      applied = cpu().adamw_step_mixed(f(h[0]), h[1], h[2], t, f(h[3]), f(h[4]), n, c, step, inv_scale);
                    });
    return applied;
  }

 private:
  using Host = std::vector<void*>;
  static Arg in(const void* p, std::size_t floats, const char* name) { return {p, floats * 4, false, name}; }
  static Arg out(const void* p, std::size_t floats, const char* name) { return {p, floats * 4, true, name}; }
  static float* f(void* p) { return static_cast<float*>(p); }
  static TrainOps& cpu() { return train_ops(Device::cpu()); }
  static StandInDeviceOps& dev() { return standin_device(); }

  // Checks every buffer is device memory now (a GPU kernel given a host pointer faults),
  // then queues: decode the buffers, run `body` on the host copies, encode what it wrote.
  // Written buffers are decoded too: kernels that add (accumulate) read them.
  void launch(const char* op, std::vector<Arg> args, std::function<void(Host&)> body) {
    for (const Arg& a : args)
      if (a.device && a.bytes > 0 && !dev().owns(a.device))
        throw Error(std::string("stand-in device: ") + op + "'s " + a.name +
                    " is host memory; a GPU kernel reads device memory only: copy it to the device first");
    dev().enqueue([op, args = std::move(args), body = std::move(body)] { run(op, args, body); });
  }
  void launch_and_wait(const char* op, std::vector<Arg> args, std::function<void(Host&)> body) {
    launch(op, std::move(args), std::move(body));
    dev().drain_this_thread();
  }
  static void run(const char* op, const std::vector<Arg>& args, const std::function<void(Host&)>& body) {
    std::vector<std::vector<float>> copies;
    Host host;
    for (const Arg& a : args) {
      copies.emplace_back((a.bytes + 3) / 4);
      void* h = a.device ? static_cast<void*>(copies.back().data()) : nullptr;
      if (a.device) dev().decode(h, a.device, a.bytes, op);
      host.push_back(h);
    }
    body(host);
    for (std::size_t i = 0; i < args.size(); ++i)
      if (args[i].written && args[i].device)
        dev().encode(const_cast<void*>(args[i].device), host[i], args[i].bytes, op);
  }
  int index_;
};

}  // namespace

TrainOps& standin_train_ops(int index) {
  static StandInTrainOps ops0(0), ops1(1);
  if (index < 0 || index > 1) throw Error("stand-in device: no device " + std::to_string(index) + " (it has 2)");
  return index == 0 ? ops0 : ops1;
}

bool standin_device_installed() { return cuda_ops() == &standin_device(); }

void use_standin_device() { install_cuda_ops(&standin_device()); }

}  // namespace dtl
