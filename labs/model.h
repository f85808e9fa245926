// The training substrate of the labs: an MLP with explicit forward and backward (no
// autograd), its parameters and gradients each in one contiguous buffer with per-layer
// views, so buckets and shards are plain ranges. Data comes from a fixed teacher network.
//
//   x → Linear → GELU → Linear → GELU → ... → Linear → y      (layers Linear layers)
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/memory/memory.h"

namespace dtl {

struct MlpShape {
  int in = 64, width = 256, out = 64, layers = 4;
};

struct LayerView {
  std::size_t w_offset = 0, b_offset = 0;  // into params()/grads(), in floats
  int in = 0, out = 0;
  std::size_t w_count() const { return std::size_t(in) * std::size_t(out); }
  std::size_t end() const { return b_offset + std::size_t(out); }  // one past the layer's last float
};

class Mlp {
 public:
  // Parameters from a fixed seed (same on every rank), scaled like PyTorch's default init.
  // precision f32, or bf16/f16 for mixed precision: parameters and gradients are stored
  // in 16 bits (2 + 2 bytes per parameter); forward and backward compute in fp32, widening
  // one layer's weights at a time into a workspace (on a GPU, tensor cores would take the
  // 16-bit values directly). The fp32 master copy belongs to the optimizer.
  Mlp(const MlpShape& shape, MemoryTracker& mem, std::uint32_t seed, DType precision = DType::f32);

  const MlpShape& shape() const { return shape_; }
  DType precision() const { return precision_; }
  std::size_t num_params() const { return params_.numel(); }
  // The raw buffers, elements of precision().
  void* param_data() { return params_.data(); }
  void* grad_data() { return grads_.data(); }
  // As floats: only for precision f32 (Error otherwise).
  float* params();
  float* grads();
  const float* params() const;
  const std::vector<LayerView>& layers() const { return layers_; }

  // Forward on `batch` rows of x; keeps what backward needs. Returns the output rows.
  const float* forward(const float* x, int batch);
  // Backward from dL/dy of the last forward. Layers finish from last to first; after
  // layer l's gradients are final, on_layer_ready(l) runs (DDP launches buckets there).
  // accumulate: add to the gradients instead of overwriting them.
  void backward(const float* dy, bool accumulate, const std::function<void(int layer)>& on_layer_ready = {});

 private:
  void ensure_activations(int batch);
  const float* layer_weights(const LayerView& v);  // fp32 weights and bias of one layer
  MlpShape shape_;
  DType precision_;
  MemoryTracker& mem_;
  Tensor params_, grads_;
  std::vector<LayerView> layers_;
  int batch_ = 0;
  const float* input_ = nullptr;
  std::vector<Tensor> pre_, post_;  // per layer: before and after GELU (activations)
  Tensor dbuf_a_, dbuf_b_;          // gradient of the current layer's input and output
  Tensor wide_w_, wide_g_;          // mixed precision: one layer's weights and gradients in fp32
};

// A regression task from a fixed random teacher MLP: inputs ~ N(0, 1), targets = teacher(x).
struct Dataset {
  int samples = 0, in = 0, out = 0;
  std::vector<float> x, y;
  const float* x_row(int i) const { return x.data() + std::size_t(i) * std::size_t(in); }
  const float* y_row(int i) const { return y.data() + std::size_t(i) * std::size_t(out); }
};
Dataset make_teacher_data(const MlpShape& shape, int samples, std::uint32_t seed);

}  // namespace dtl
