// The MLP of the training labs, as a list of layers over one parameter layout:
//
//   x → [Linear → GELU] → [Linear → GELU] → ... → [Linear] → y      (shape.layers layers)
//
// Layer l is its Linear and the GELU after it (the last layer has none). Its weight
// [out × in] and bias [out] are tensors "weight" and "bias" of layer l in the flat buffers
// (labs/train/param_layout.h), so DDP buckets, ZeRO shards and pipeline stages are ranges.
//
// Forward and backward run one layer at a time and can be called for a slice of the layers
// (a pipeline stage holds only layers first..last: `Mlp(..., LayerSpan{first, last})`).
// Backward can produce dX of the first layer held (the gradient a stage sends back).
//
// Hooks, in this order for each call (layer numbers are the model's, descending in backward):
//   forward:  before_forward(l), layer l's forward, after_forward(l)           l = first..last
//   backward: before_backward(l), layer l's backward (dW, db, dX), after_backward(l)  l = last..first
// after_backward(l) is DDP's "gradients of layer l are ready"; before_forward(l) and
// before_backward(l) are where ZeRO-3 gathers layer l's parameters, after_* where it frees
// them. Device work queued before a hook has finished when the hook runs.
//
// Numerics: fp32, or mixed precision (bf16/f16 parameters and gradients, 2 + 2 bytes per
// parameter; the fp32 master copy belongs to the optimizer). Compute is in fp32, one
// layer's weights widened at a time into a workspace (a GPU's tensor cores would take the
// 16-bit values directly).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/memory/memory.h"
#include "labs/train/param_layout.h"
#include "labs/train/train_ops.h"

namespace dtl {

struct MlpShape {
  int in = 64, width = 256, out = 64, layers = 4;
};

// Layers first..last of the model (inclusive); last = -1 means through the last layer.
struct LayerSpan {
  int first = 0, last = -1;
};

// Which whole flat buffers the model allocates itself. ZeRO shards them: a model without
// its own parameters reads layer l's from wherever the lab binds them (a ZeRO-3 gather
// buffer, a padded ZeRO-1/2 buffer), one without its own gradients writes layer l's into
// a bound buffer (a ZeRO-2 bucket that is reduce-scattered and freed).
struct MlpStorage {
  bool params = true, grads = true;
};

// Where some of the initial parameters go: elements `range` of the flat buffer, written
// to `dst` (precision elements, on the model's device).
struct ParamPiece {
  Range range;
  void* dst = nullptr;
};

struct LayerHooks {
  std::function<void(int layer)> before_forward, after_forward, before_backward, after_backward;
};

// What one forward keeps for its backward: a layer's input, its pre-activation z and its
// output. One per micro-batch in flight (a pipeline keeps several), tagged activation.
class Activations {
 public:
  int batch() const { return batch_; }

 private:
  friend class Mlp;
  int batch_ = 0;
  const float* input = nullptr;   // the caller's x: must outlive the backward
  std::vector<Tensor> pre, post;  // per held layer: z = x·Wᵀ + b, and GELU(z)
  std::vector<Tensor> dz;         // per held layer: dL/dz, kept by backward_input for backward_weight
};

// What an Mlp allocates in its rank's MemoryTracker, by tag, with `rows` rows in flight
// (one set of Activations and the backward workspace): for the memory check before a run
// and the report's estimate beside the measured peak.
struct MlpMemory {
  double params = 0, grads = 0, activations = 0, workspace = 0;  // bytes
  double total() const { return params + grads + activations + workspace; }
};
MlpMemory mlp_memory(const MlpShape& shape, DType precision, int rows, LayerSpan span = {});
// Parameters of layers span.first..last (the whole model by default): Σ in·out + out over
// the layers. The Ψ of the DDP and ZeRO formulas; mlp_memory's params are it times the bytes
// of one parameter.
std::size_t parameter_count(const MlpShape& shape, LayerSpan span = {});

class Mlp {
 public:
  // Parameters from a fixed seed, the same draws on every rank and for every span, scaled as
  // nn.Linear initializes (uniform ±1/√in), rounded to `precision`.
  Mlp(const MlpShape& shape, MemoryTracker& mem, std::uint32_t seed, DType precision = DType::f32,
      Device device = Device::cpu(), LayerSpan span = {}, MlpStorage storage = {});

  const MlpShape& shape() const { return shape_; }
  DType precision() const { return precision_; }
  Device device() const { return ops_.device(); }
  TrainOps& ops() { return ops_; }
  const ParamLayout& layout() const { return layout_; }
  int first_layer() const { return first_; }
  int last_layer() const { return last_; }
  int in_features(int layer) const { return layer == 0 ? shape_.in : shape_.width; }
  int out_features(int layer) const { return layer == shape_.layers - 1 ? shape_.out : shape_.width; }
  std::size_t num_params() const { return layout_.numel(); }

  // The flat buffers, elements of precision() (Error when the model does not hold them).
  void* param_data();
  void* grad_data();
  const void* param_data() const;
  const void* grad_data() const;
  const MlpStorage& storage() const { return storage_; }
  // Without its own buffers (MlpStorage): layer l's parameters (weight then bias, layer_range(l)
  // elements of precision()) are read from `p`, its gradients written to `g`, until bound again.
  // Null unbinds; using an unbound layer is an Error naming it.
  void bind_layer_params(int l, const void* p);
  void bind_layer_grads(int l, void* g);
  // The initial parameters of the given ranges (the same values the model starts with when it
  // holds its parameters), written to each piece's dst: how a ZeRO-3 rank fills its shard
  // without ever holding the whole model.
  void initial_params(const std::vector<ParamPiece>& pieces) const;
  // As floats: only for precision f32 (Error otherwise).
  float* params();
  float* grads();
  const float* params() const;

  Activations make_activations(int batch);
  // Forward of the held layers on activations' batch rows of x; returns the last layer's output.
  const float* forward(const float* x, Activations& acts, const LayerHooks& hooks = {});
  // Backward from dL/d(output). accumulate: add to the gradients (gradient accumulation).
  // input_grad: also compute dL/dx of the first held layer, returned (else null).
  const float* backward(const float* dy, Activations& acts, bool accumulate, const LayerHooks& hooks = {},
                        bool input_grad = false);
  // Zero-bubble's split of backward (Qi et al. 2023), fp32 only: backward_input is B — dL/dx
  // through the held layers, keeping each layer's dL/dz in `acts` — and backward_weight is
  // W — the weight and bias gradients from those, any time later. Together they equal
  // backward(). Hooks fire as in backward(); input_grad as there.
  const float* backward_input(const float* dy, Activations& acts, const LayerHooks& hooks = {},
                              bool input_grad = false);
  void backward_weight(Activations& acts, bool accumulate);

  // The same with activations the model keeps itself (one micro-batch in flight).
  const float* forward(const float* x, int batch, const LayerHooks& hooks = {});
  const float* backward(const float* dy, bool accumulate, const LayerHooks& hooks = {}, bool input_grad = false);

  // One layer (l in first..last); x and dy of the layer's input and output width.
  const float* forward_layer(int l, const float* x, Activations& acts);
  // Writes dW and db of layer l; dx: where dL/d(input) goes (null: not computed).
  void backward_layer(int l, const float* dy, Activations& acts, bool accumulate, float* dx);

 private:
  int slot(int l) const { return l - first_; }
  const float* layer_weights(int l);      // fp32 weights then bias of layer l
  const void* layer_params(int l) const;  // layer l's parameters, own or bound
  void* layer_grads(int l);
  void ensure_workspace(int batch);
  MlpShape shape_;
  DType precision_;
  MemoryTracker& mem_;
  TrainOps& ops_;
  int first_ = 0, last_ = 0;
  ParamLayout layout_;
  std::uint32_t seed_;
  MlpStorage storage_;
  Tensor params_, grads_;
  std::vector<const void*> bound_params_;  // per held layer, without own parameters
  std::vector<void*> bound_grads_;
  Activations own_;
  Tensor dz_, dbuf_a_, dbuf_b_;  // backward workspace: dL/dz and the ping-pong of dL/d(layer output)
  Tensor wide_w_, wide_g_;       // mixed precision: one layer's weights and gradients in fp32
};

}  // namespace dtl
