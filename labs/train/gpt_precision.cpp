// The GPT's precision (gpt.h, "Precision"): where a tensor's fp32 values live, the
// widening of a layer's 16-bit parameters into an fp32 window before it runs, and the
// one rounding of its fp32 gradients afterwards. In fp32 every function here is the
// identity on the flat buffers.
#include <string>

#include "core/error.h"
#include "core/memory/device_ops.h"
#include "labs/train/gpt.h"

namespace dtl {

namespace {
void require_f32(DType precision, const char* accessor) {
  if (precision != DType::f32)
    throw Error(std::string("Gpt::") + accessor + "() as floats needs fp32; in mixed precision use whole_params() " +
                "for the raw buffers or full_tensor() for values");
}
}  // namespace

float* Gpt::params() { return require_f32(precision_, "params"), params_.as<float>(); }
float* Gpt::grads() { return require_f32(precision_, "grads"), grads_.as<float>(); }
const float* Gpt::params() const { return require_f32(precision_, "params"), params_.as<float>(); }
const float* Gpt::grads() const { return require_f32(precision_, "grads"), grads_.as<float>(); }

// Windows: edge_ holds layer 0 (wte, wpe) then layer L+1 (ln_f); block_ the largest block.
void Gpt::allocate_windows() {
  if (!mixed()) return;
  const Device dev = ops_.device();
  const auto window = [&](std::size_t n) { return Tensor(mem_, {std::int64_t(n)}, DType::f32, MemTag::other, dev); };
  const std::size_t edges = layout_.layer_range(0).size() + layout_.layer_range(c_.layers + 1).size();
  const std::size_t block = layout_.layer_range(1).size();  // every block has the same tensors
  edge_w_ = window(edges), edge_g_ = window(edges), block_w_ = window(block), block_g_ = window(block);
}

float* Gpt::param(std::size_t index) {
  const Range r = tensors_[index].range;
  if (!mixed()) return params_.as<float>() + r.begin;
  const int layer = layer_of(index);
  if (layer == 0) return edge_w_.as<float>() + r.begin;
  if (layer == c_.layers + 1)
    return edge_w_.as<float>() + layout_.layer_range(0).size() + (r.begin - layout_.layer_range(layer).begin);
  if (widened_block_ != layer - 1)  // a bug in the step's order, not the user's input
    throw Error("Gpt: block " + std::to_string(layer - 1) + "'s parameters used while block " +
                std::to_string(widened_block_) + " is widened");
  return block_w_.as<float>() + (r.begin - layout_.layer_range(layer).begin);
}

float* Gpt::grad(std::size_t index) {
  if (!mixed()) return grads_.as<float>() + tensors_[index].range.begin;
  // The same offset in the gradient window as the parameter has in the weight window.
  const float* w = param(index);
  const int layer = layer_of(index);
  const bool edge = layer == 0 || layer == c_.layers + 1;
  const float* base = edge ? edge_w_.as<float>() : block_w_.as<float>();
  return (edge ? edge_g_.as<float>() : block_g_.as<float>()) + (w - base);
}

void Gpt::widen_edges() {
  if (!mixed()) return;
  widened_block_ = -1;  // a new step: the optimizer may have changed every parameter since
  const Range first = layout_.layer_range(0), last = layout_.layer_range(c_.layers + 1);
  ops_.to_float(element(params_.data(), first.begin, precision_), precision_, edge_w_.as<float>(), first.size());
  ops_.to_float(element(params_.data(), last.begin, precision_), precision_, edge_w_.as<float>() + first.size(),
                last.size());
  ops_.zero(edge_g_.as<float>(), edge_g_.numel());
}

void Gpt::widen_block(int i) {
  if (!mixed() || widened_block_ == i) return;
  const Range r = layout_.layer_range(i + 1);
  ops_.to_float(element(params_.data(), r.begin, precision_), precision_, block_w_.as<float>(), r.size());
  widened_block_ = i;
}

void Gpt::begin_block_backward(int i) {
  if (!mixed()) return;
  widen_block(i);
  ops_.zero(block_g_.as<float>(), block_g_.numel());
}

void Gpt::narrow_block_grads(int i) {
  if (!mixed()) return;
  const Range r = layout_.layer_range(i + 1);
  ops_.from_float(block_g_.as<float>(), element(grads_.data(), r.begin, precision_), precision_, r.size(), false);
}

void Gpt::narrow_edge_grads() {
  if (!mixed()) return;
  const Range first = layout_.layer_range(0), last = layout_.layer_range(c_.layers + 1);
  ops_.from_float(edge_g_.as<float>(), element(grads_.data(), first.begin, precision_), precision_, first.size(),
                  false);
  ops_.from_float(edge_g_.as<float>() + first.size(), element(grads_.data(), last.begin, precision_), precision_,
                  last.size(), false);
}

void Gpt::store_floats(Range r, const float* values) {
  std::vector<std::byte> rounded(r.size() * dtype_size(precision_));
  from_float(values, rounded.data(), precision_, r.size());  // on the host, then one copy
  copy_bytes(element(params_.data(), r.begin, precision_), rounded.data(), rounded.size());
  widened_block_ = -1;  // a window may hold the old values
}

std::vector<float> Gpt::load_floats(Range r, GptBuffer which) const {
  const Tensor& buffer = which == GptBuffer::params ? params_ : grads_;
  std::vector<float> out(r.size());
  copy_to_host_floats(element(buffer.data(), r.begin, precision_), precision_, out);
  return out;
}

}  // namespace dtl
