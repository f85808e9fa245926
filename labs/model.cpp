#include "labs/model.h"

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

Mlp::Mlp(const MlpShape& shape, MemoryTracker& mem, std::uint32_t seed)
    : shape_(shape), mem_(mem),
      params_(mem, {std::int64_t(param_count(shape))}, DType::f32, MemTag::param),
      grads_(mem, {std::int64_t(param_count(shape))}, DType::f32, MemTag::grad) {
  if (shape.layers < 1 || shape.in < 1 || shape.width < 1 || shape.out < 1)
    throw UsageError("the MLP needs at least one layer and positive widths");
  std::mt19937 rng(seed);
  std::size_t offset = 0;
  for (int l = 0; l < shape.layers; ++l) {
    LayerView v;
    v.in = l == 0 ? shape.in : shape.width;
    v.out = l == shape.layers - 1 ? shape.out : shape.width;
    v.w_offset = offset;
    v.b_offset = offset + v.w_count();
    offset = v.end();
    // Uniform(-1/√in, 1/√in), as nn.Linear initializes weights and biases.
    std::uniform_real_distribution<float> d(-1.0f / std::sqrt(float(v.in)), 1.0f / std::sqrt(float(v.in)));
    for (std::size_t i = v.w_offset; i < v.end(); ++i) params()[i] = d(rng);
    layers_.push_back(v);
  }
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
    kernels::linear_forward(h, params() + v.w_offset, params() + v.b_offset, z, batch, v.in, v.out);
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
    kernels::linear_backward(layer_input, params() + v.w_offset, d_out, l == 0 ? nullptr : d_in, grads() + v.w_offset,
                             grads() + v.b_offset, B, v.in, v.out, accumulate);
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
