#include "labs/train/mlp.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/error.h"
#include "core/memory/device_ops.h"

namespace dtl {

namespace {

void validate(const MlpShape& s, DType precision, const LayerSpan& span) {
  if (s.layers < 1 || s.in < 1 || s.width < 1 || s.out < 1)
    throw UsageError("the MLP needs at least one layer and positive widths");
  if (precision != DType::f32 && precision != DType::bf16 && precision != DType::f16)
    throw UsageError("the MLP trains in f32, or in mixed precision with bf16 or f16");
  const int last = span.last < 0 ? s.layers - 1 : span.last;
  if (span.first < 0 || span.first > last || last >= s.layers)
    throw UsageError("layers " + std::to_string(span.first) + ".." + std::to_string(last) + " are not a span of the " +
                     std::to_string(s.layers) + "-layer MLP");
}

}  // namespace

Mlp::Mlp(const MlpShape& shape, MemoryTracker& mem, std::uint32_t seed, DType precision, Device device, LayerSpan span,
         MlpStorage storage)
    : shape_(shape), precision_(precision), mem_(mem), ops_(train_ops(device)), seed_(seed), storage_(storage) {
  validate(shape, precision, span);
  first_ = span.first;
  last_ = span.last < 0 ? shape.layers - 1 : span.last;
  std::size_t largest = 0;
  for (int l = first_; l <= last_; ++l) {
    layout_.add(l, "weight", {out_features(l), in_features(l)});
    layout_.add(l, "bias", {out_features(l)});
    largest = std::max(largest, layout_.layer_range(l).size());
  }
  bound_params_.assign(std::size_t(last_ - first_ + 1), nullptr);
  bound_grads_.assign(std::size_t(last_ - first_ + 1), nullptr);
  if (storage.params) {
    params_ = Tensor(mem, {std::int64_t(layout_.numel())}, precision, MemTag::param, device);
    initial_params({{{0, layout_.numel()}, params_.data()}});
  }
  if (storage.grads) grads_ = Tensor(mem, {std::int64_t(layout_.numel())}, precision, MemTag::grad, device);
  if (precision != DType::f32) {
    wide_w_ = Tensor(mem, {std::int64_t(largest)}, DType::f32, MemTag::other, device);
    wide_g_ = Tensor(mem, {std::int64_t(largest)}, DType::f32, MemTag::other, device);
  }
}

void Mlp::initial_params(const std::vector<ParamPiece>& pieces) const {
  // Uniform(-1/√in, 1/√in), as nn.Linear initializes weights and biases. Every layer's
  // draws are made, held or not, so a stage's layers equal the whole model's.
  std::mt19937 rng(seed_);
  std::vector<float> init;
  std::vector<std::byte> rounded;
  for (int l = 0; l <= last_; ++l) {
    const float bound = 1.0f / std::sqrt(float(in_features(l)));
    std::uniform_real_distribution<float> d(-bound, bound);
    init.resize(std::size_t(in_features(l)) * std::size_t(out_features(l)) + std::size_t(out_features(l)));
    for (float& x : init) x = d(rng);
    if (l < first_) continue;
    const Range layer = layout_.layer_range(l);
    for (const ParamPiece& piece : pieces) {
      const Range r = intersect(layer, piece.range);
      if (r.empty()) continue;
      rounded.resize(r.size() * dtype_size(precision_));
      from_float(init.data() + (r.begin - layer.begin), rounded.data(), precision_, r.size());
      copy_bytes(element(piece.dst, r.begin - piece.range.begin, precision_), rounded.data(), rounded.size());
    }
  }
}

std::size_t parameter_count(const MlpShape& s, LayerSpan span) {
  const int last = span.last < 0 ? s.layers - 1 : span.last;
  auto in = [&](int l) { return std::size_t(l == 0 ? s.in : s.width); };
  auto out = [&](int l) { return std::size_t(l == s.layers - 1 ? s.out : s.width); };
  std::size_t params = 0;
  for (int l = span.first; l <= last; ++l) params += in(l)*out(l) + out(l);
  return params;
}

MlpMemory mlp_memory(const MlpShape& s, DType precision, int rows, LayerSpan span) {
  const int last = span.last < 0 ? s.layers - 1 : span.last;
  auto in = [&](int l) { return double(l == 0 ? s.in : s.width); };
  auto out = [&](int l) { return double(l == s.layers - 1 ? s.out : s.width); };
  double largest = 0, widest = in(span.first), activations = 0;
  for (int l = span.first; l <= last; ++l) {
    largest = std::max(largest, in(l)*out(l) + out(l));
    widest = std::max(widest, out(l));
    activations += 4.0 * rows * out(l) * (l < s.layers - 1 ? 2 : 1);  // z, and GELU(z) but after the last layer
  }
  MlpMemory m;
  m.params = m.grads = double(parameter_count(s, span)) * double(dtype_size(precision));
  m.activations = activations + 3 * 4.0 * rows * widest;  // + the backward workspace: dL/dz and a ping-pong pair
  m.workspace = precision == DType::f32 ? 0 : 2 * 4.0 * largest;  // one layer's weights and gradients widened
  return m;
}

namespace {
void require_f32(DType precision, const char* accessor, const char* raw_accessor) {
  if (precision != DType::f32)
    throw Error(std::string("Mlp::") + accessor + "() as floats needs f32; in mixed precision use " + raw_accessor +
                "()");
}

void require_own(bool owned, const char* what) {
  if (!owned)
    throw Error(std::string("this Mlp does not hold its ") + what + " (MlpStorage): they are bound layer by layer");
}
}  // namespace

void* Mlp::param_data() {
  require_own(storage_.params, "parameters");
  return params_.data();
}
const void* Mlp::param_data() const {
  require_own(storage_.params, "parameters");
  return params_.data();
}
void* Mlp::grad_data() {
  require_own(storage_.grads, "gradients");
  return grads_.data();
}
const void* Mlp::grad_data() const {
  require_own(storage_.grads, "gradients");
  return grads_.data();
}
float* Mlp::params() {
  require_f32(precision_, "params", "param_data");
  return static_cast<float*>(param_data());
}
const float* Mlp::params() const {
  require_f32(precision_, "params", "param_data");
  return static_cast<const float*>(param_data());
}
float* Mlp::grads() {
  require_f32(precision_, "grads", "grad_data");
  return static_cast<float*>(grad_data());
}

namespace {
void require_held(int l, int first, int last) {
  if (l < first || l > last) throw Error("layer " + std::to_string(l) + " is not held by this model");
}
}  // namespace

void Mlp::bind_layer_params(int l, const void* p) {
  require_held(l, first_, last_);
  bound_params_[std::size_t(slot(l))] = p;
}
void Mlp::bind_layer_grads(int l, void* g) {
  require_held(l, first_, last_);
  bound_grads_[std::size_t(slot(l))] = g;
}

const void* Mlp::layer_params(int l) const {
  if (storage_.params) return element(const_cast<void*>(params_.data()), layout_.layer_range(l).begin, precision_);
  const void* p = bound_params_[std::size_t(slot(l))];
  if (!p)
    throw Error("layer " + std::to_string(l) + "'s parameters are not bound (a sharded model gathers them before use)");
  return p;
}
void* Mlp::layer_grads(int l) {
  if (storage_.grads) return element(grads_.data(), layout_.layer_range(l).begin, precision_);
  void* g = bound_grads_[std::size_t(slot(l))];
  if (!g)
    throw Error("layer " + std::to_string(l) + "'s gradients are not bound (a sharded model binds a bucket first)");
  return g;
}

const float* Mlp::layer_weights(int l) {
  const Range r = layout_.layer_range(l);  // the weight, then the bias
  if (precision_ == DType::f32) return static_cast<const float*>(layer_params(l));
  ops_.to_float(layer_params(l), precision_, wide_w_.as<float>(), r.size());
  return wide_w_.as<float>();
}

Activations Mlp::make_activations(int batch) {
  if (batch < 1) throw UsageError("a forward pass needs at least one row, not " + std::to_string(batch));
  Activations a;
  a.batch_ = batch;
  for (int l = first_; l <= last_; ++l) {
    a.pre.emplace_back(mem_, std::vector<std::int64_t>{batch, out_features(l)}, DType::f32, MemTag::activation,
                       device());
    if (l < shape_.layers - 1)  // the last layer has no GELU
      a.post.emplace_back(mem_, std::vector<std::int64_t>{batch, out_features(l)}, DType::f32, MemTag::activation,
                          device());
  }
  return a;
}

void Mlp::ensure_workspace(int batch) {
  int widest = in_features(first_);
  for (int l = first_; l <= last_; ++l) widest = std::max(widest, out_features(l));
  const std::size_t need = std::size_t(batch) * std::size_t(widest);
  if (dz_.numel() >= need) return;
  for (Tensor* t : {&dz_, &dbuf_a_, &dbuf_b_}) {
    *t = Tensor();  // free first: the peak holds one set, not two
    *t = Tensor(mem_, {std::int64_t(need)}, DType::f32, MemTag::activation, device());
  }
}

const float* Mlp::forward_layer(int l, const float* x, Activations& acts) {
  require_held(l, first_, last_);
  if (l == first_) acts.input = x;
  const std::size_t n = std::size_t(acts.batch_) * std::size_t(out_features(l));
  const float* w = layer_weights(l);
  const std::size_t w_count = std::size_t(in_features(l)) * std::size_t(out_features(l));
  float* z = acts.pre[std::size_t(slot(l))].as<float>();
  ops_.linear_forward(x, w, w + w_count, z, acts.batch_, in_features(l), out_features(l));
  if (l == shape_.layers - 1) return z;  // no activation after the last layer
  float* y = acts.post[std::size_t(slot(l))].as<float>();
  ops_.gelu_forward(z, y, n);
  return y;
}

void Mlp::backward_layer(int l, const float* dy, Activations& acts, bool accumulate, float* dx) {
  require_held(l, first_, last_);
  ensure_workspace(acts.batch_);
  const int B = acts.batch_, in = in_features(l), out = out_features(l);
  const float* dz = dy;
  if (l < shape_.layers - 1) {  // through this layer's GELU: dL/dz = GELU'(z)·dL/dy
    ops_.gelu_backward(acts.pre[std::size_t(slot(l))].as<float>(), dy, dz_.as<float>(),
                       std::size_t(B) * std::size_t(out));
    dz = dz_.as<float>();
  }
  const float* x = l == first_ ? acts.input : acts.post[std::size_t(slot(l) - 1)].as<float>();
  const Range r = layout_.layer_range(l);
  const std::size_t w_count = std::size_t(in) * std::size_t(out);
  if (precision_ == DType::f32) {
    float* g = static_cast<float*>(layer_grads(l));
    ops_.linear_backward(x, layer_weights(l), dz, dx, g, g + w_count, B, in, out, accumulate);
    return;
  }
  // Mixed precision: this layer's fp32 gradients, then rounded into (or added to) the 16-bit buffer.
  float* g = wide_g_.as<float>();
  ops_.linear_backward(x, layer_weights(l), dz, dx, g, g + w_count, B, in, out, false);
  ops_.from_float(g, layer_grads(l), precision_, r.size(), accumulate);
}

namespace {
// Device work queued so far is done before a hook sees the buffers.
void call_hook(TrainOps& ops, const std::function<void(int)>& hook, int layer) {
  if (!hook) return;
  ops.synchronize();
  hook(layer);
}
}  // namespace

const float* Mlp::forward(const float* x, Activations& acts, const LayerHooks& hooks) {
  const float* h = x;
  for (int l = first_; l <= last_; ++l) {
    call_hook(ops_, hooks.before_forward, l);
    h = forward_layer(l, h, acts);
    call_hook(ops_, hooks.after_forward, l);
  }
  return h;
}

const float* Mlp::backward(const float* dy, Activations& acts, bool accumulate, const LayerHooks& hooks,
                           bool input_grad) {
  ensure_workspace(acts.batch_);
  const float* d = dy;
  float* next = dbuf_a_.as<float>();
  for (int l = last_; l >= first_; --l) {
    call_hook(ops_, hooks.before_backward, l);
    float* dx = l > first_ || input_grad ? next : nullptr;  // dX of the first layer only on request
    backward_layer(l, d, acts, accumulate, dx);
    call_hook(ops_, hooks.after_backward, l);
    d = dx;
    next = next == dbuf_a_.as<float>() ? dbuf_b_.as<float>() : dbuf_a_.as<float>();  // never the buffer just read
  }
  return input_grad ? d : nullptr;
}

const float* Mlp::backward_input(const float* dy, Activations& acts, const LayerHooks& hooks, bool input_grad) {
  if (precision_ != DType::f32) throw UsageError("the split backward (zero-bubble's B and W) runs in fp32 only");
  ensure_workspace(acts.batch_);
  if (acts.dz.empty())
    for (int l = first_; l <= last_; ++l)
      acts.dz.emplace_back(mem_, std::vector<std::int64_t>{acts.batch_, out_features(l)}, DType::f32,
                           MemTag::activation, device());
  const float* d = dy;
  float* next = dbuf_a_.as<float>();
  for (int l = last_; l >= first_; --l) {
    call_hook(ops_, hooks.before_backward, l);
    const std::size_t n = std::size_t(acts.batch_) * std::size_t(out_features(l));
    float* dz = acts.dz[std::size_t(slot(l))].as<float>();
    if (l < shape_.layers - 1)
      ops_.gelu_backward(acts.pre[std::size_t(slot(l))].as<float>(), d, dz, n);
    else
      copy_bytes(dz, d, n * sizeof(float));  // the last layer has no GELU: dL/dz = dL/dy
    float* dx = l > first_ || input_grad ? next : nullptr;
    if (dx)
      ops_.linear_backward(nullptr, layer_weights(l), dz, dx, nullptr, nullptr, acts.batch_, in_features(l),
                           out_features(l), false);
    call_hook(ops_, hooks.after_backward, l);
    d = dx;
    next = next == dbuf_a_.as<float>() ? dbuf_b_.as<float>() : dbuf_a_.as<float>();
  }
  return input_grad ? d : nullptr;
}

void Mlp::backward_weight(Activations& acts, bool accumulate) {
  if (acts.dz.size() != std::size_t(last_ - first_ + 1)) throw Error("Mlp::backward_weight before backward_input");
  for (int l = first_; l <= last_; ++l) {
    const float* x = l == first_ ? acts.input : acts.post[std::size_t(slot(l) - 1)].as<float>();
    float* g = static_cast<float*>(layer_grads(l));
    const std::size_t w_count = std::size_t(in_features(l)) * std::size_t(out_features(l));
    ops_.linear_backward(x, nullptr, acts.dz[std::size_t(slot(l))].as<float>(), nullptr, g, g + w_count, acts.batch_,
                         in_features(l), out_features(l), accumulate);
  }
  ops_.synchronize();
}

const float* Mlp::forward(const float* x, int batch, const LayerHooks& hooks) {
  if (own_.batch() != batch) {
    own_ = Activations();  // free first: the peak holds one set
    own_ = make_activations(batch);
  }
  return forward(x, own_, hooks);
}

const float* Mlp::backward(const float* dy, bool accumulate, const LayerHooks& hooks, bool input_grad) {
  if (own_.batch() == 0) throw Error("Mlp::backward before a forward");
  return backward(dy, own_, accumulate, hooks, input_grad);
}

}  // namespace dtl
