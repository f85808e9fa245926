#include "labs/model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "core/error.h"
#include "kernels/cpu/kernels.h"

namespace dtl {

namespace {
std::size_t param_count(const MlpShape& s) {
  std::size_t n = 0;
  for (int l = 0; l < s.layers; ++l) {
    const int in = l == 0 ? s.in : s.width, out = l == s.layers - 1 ? s.out : s.width;
    n += std::size_t(in) * std::size_t(out) + std::size_t(out);
  }
  return n;
}
}  // namespace

Mlp::Mlp(const MlpShape& shape, MemoryTracker& mem, std::uint32_t seed, DType precision)
    : shape_(shape), precision_(precision), mem_(mem),
      params_(mem, {std::int64_t(param_count(shape))}, precision, MemTag::param),
      grads_(mem, {std::int64_t(param_count(shape))}, precision, MemTag::grad) {
  if (shape.layers < 1 || shape.in < 1 || shape.width < 1 || shape.out < 1)
    throw UsageError("the MLP needs at least one layer and positive widths");
  if (precision != DType::f32 && precision != DType::bf16 && precision != DType::f16)
    throw UsageError("the MLP trains in f32, or in mixed precision with bf16 or f16");
  std::mt19937 rng(seed);
  std::size_t offset = 0, largest = 0;
  std::vector<float> init;
  for (int l = 0; l < shape.layers; ++l) {
    LayerView v;
    v.in = l == 0 ? shape.in : shape.width;
    v.out = l == shape.layers - 1 ? shape.out : shape.width;
    v.w_offset = offset;
    v.b_offset = offset + v.w_count();
    offset = v.end();
    // Uniform(-1/√in, 1/√in), as nn.Linear initializes weights and biases; the same
    // draws in every precision, rounded to it.
    std::uniform_real_distribution<float> d(-1.0f / std::sqrt(float(v.in)), 1.0f / std::sqrt(float(v.in)));
    init.resize(v.end() - v.w_offset);
    for (float& x : init) x = d(rng);
    from_float(init.data(), static_cast<std::byte*>(params_.data()) + v.w_offset * params_.element_size(), precision,
               init.size());
    largest = std::max(largest, init.size());
    layers_.push_back(v);
  }
  if (precision != DType::f32) {
    wide_w_ = Tensor(mem, {std::int64_t(largest)}, DType::f32, MemTag::other);
    wide_g_ = Tensor(mem, {std::int64_t(largest)}, DType::f32, MemTag::other);
  }
}

namespace {
void require_f32(DType precision, const char* accessor, const char* raw_accessor) {
  if (precision != DType::f32)
    throw Error(std::string("Mlp::") + accessor + "() as floats needs f32; in mixed precision use " + raw_accessor + "()");
}
}  // namespace

float* Mlp::params() {
  require_f32(precision_, "params", "param_data");
  return params_.as<float>();
}
const float* Mlp::params() const {
  require_f32(precision_, "params", "param_data");
  return params_.as<float>();
}
float* Mlp::grads() {
  require_f32(precision_, "grads", "grad_data");
  return grads_.as<float>();
}

const float* Mlp::layer_weights(const LayerView& v) {
  if (precision_ == DType::f32) return params_.as<float>() + v.w_offset;
  to_float(static_cast<std::byte*>(params_.data()) + v.w_offset * params_.element_size(), precision_, wide_w_.as<float>(),
           v.end() - v.w_offset);
  return wide_w_.as<float>();
}

void Mlp::ensure_activations(int batch) {
  if (batch == batch_) return;
  batch_ = batch;
  pre_.clear();
  post_.clear();
  for (const LayerView& v : layers_) {
    pre_.emplace_back(mem_, std::vector<std::int64_t>{batch, v.out}, DType::f32, MemTag::activation);
    post_.emplace_back(mem_, std::vector<std::int64_t>{batch, v.out}, DType::f32, MemTag::activation);
  }
  int widest = shape_.in;
  for (const LayerView& v : layers_) widest = std::max(widest, v.out);
  dbuf_a_ = Tensor(mem_, {batch, widest}, DType::f32, MemTag::activation);
  dbuf_b_ = Tensor(mem_, {batch, widest}, DType::f32, MemTag::activation);
}

const float* Mlp::forward(const float* x, int batch) {
  ensure_activations(batch);
  input_ = x;
  const float* h = x;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const LayerView& v = layers_[l];
    float* z = pre_[l].as<float>();
    const float* w = layer_weights(v);  // the bias follows the weights
    kernels::linear_forward(h, w, w + v.w_count(), z, batch, v.in, v.out);
    if (l + 1 < layers_.size()) {
      kernels::gelu_forward(z, post_[l].as<float>(), std::size_t(batch) * std::size_t(v.out));
      h = post_[l].as<float>();
    } else {
      h = z;  // no activation after the last layer
    }
  }
  return h;
}

void Mlp::backward(const float* dy, bool accumulate, const std::function<void(int)>& on_layer_ready) {
  const int B = batch_;
  float* d_out = dbuf_a_.as<float>();  // dL/d(output of the current layer's linear part)
  float* d_in = dbuf_b_.as<float>();
  std::memcpy(d_out, dy, std::size_t(B) * std::size_t(layers_.back().out) * sizeof(float));
  for (int l = int(layers_.size()) - 1; l >= 0; --l) {
    const LayerView& v = layers_[std::size_t(l)];
    const float* layer_input = l == 0 ? input_ : post_[std::size_t(l - 1)].as<float>();
    const float* w = layer_weights(v);
    if (precision_ == DType::f32) {
      kernels::linear_backward(layer_input, w, d_out, l == 0 ? nullptr : d_in, grads() + v.w_offset, grads() + v.b_offset, B,
                               v.in, v.out, accumulate);
    } else {  // fp32 gradients of this layer, then rounded into (or added to) the 16-bit buffer
      float* g = wide_g_.as<float>();
      kernels::linear_backward(layer_input, w, d_out, l == 0 ? nullptr : d_in, g, g + v.w_count(), B, v.in, v.out, false);
      from_float(g, static_cast<std::byte*>(grads_.data()) + v.w_offset * grads_.element_size(), precision_,
                 v.end() - v.w_offset, accumulate);
    }
    if (on_layer_ready) on_layer_ready(l);
    if (l > 0) {  // through the GELU in front of this layer
      kernels::gelu_backward(pre_[std::size_t(l - 1)].as<float>(), d_in, d_out, std::size_t(B) * std::size_t(v.in));
    }
  }
}

Dataset make_teacher_data(const MlpShape& shape, int samples, std::uint32_t seed) {
  MemoryTracker scratch(0, nullptr);
  Mlp teacher(shape, scratch, seed ^ 0x5eedu);
  Dataset d;
  d.samples = samples;
  d.in = shape.in;
  d.out = shape.out;
  d.x.resize(std::size_t(samples) * std::size_t(shape.in));
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (auto& v : d.x) v = n(rng);
  const float* y = teacher.forward(d.x.data(), samples);
  d.y.assign(y, y + std::size_t(samples) * std::size_t(shape.out));
  return d;
}

}  // namespace dtl
