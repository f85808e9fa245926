// The optimizers of the training labs, over any range of the flat parameter buffer: the
// whole model (DDP), one rank's shard (ZeRO), one stage's layers (pipeline). State is
// sized to the range and tagged in the rank's MemoryTracker: m and v `optimizer`, the fp32
// master copy `master`.
//
//   fp32               weights 4 + grads 4 (the model's)  + m 4 + v 4            = 16 B/param
//   mixed, master      weights 2 + grads 2 (bf16/f16)     + master 4 + m 4 + v 4 = 16 B/param
//   mixed, no master   weights 2 + grads 2                + m 4 + v 4            = 12 B/param
//
// A master copy exists because a 16-bit weight cannot take a small update (bf16 keeps 8
// significant bits: w + 1e-4·w rounds back to w); without it (seed 002's 12-byte count)
// each step widens the 16-bit weights, updates them in fp32 and rounds them back. Updates
// are elementwise, so an optimizer over a shard gives the same bits as one over the whole
// buffer for the elements they share.
#pragma once

#include <cstddef>
#include <vector>

#include "core/memory/memory.h"
#include "kernels/cpu/kernels.h"
#include "labs/train/mlp.h"
#include "labs/train/train_ops.h"

namespace dtl {

// What one step updates: `count` elements of the model's storage type. grads may point
// anywhere (ZeRO-2 keeps only its shard's gradients, in a buffer of their own).
struct ParamSlice {
  void* params = nullptr;
  const void* grads = nullptr;
  std::size_t count = 0;
  DType dtype = DType::f32;
};
// The parameters and gradients of range r of the model's flat buffers.
ParamSlice slice_of(Mlp& model, Range r);
inline ParamSlice whole_model(Mlp& model) { return slice_of(model, {0, model.num_params()}); }

enum class MasterWeights { keep, none };

// What a checkpoint keeps of an optimizer (labs/train/checkpoint_sharded.h), on the host: the
// steps it applied (AdamW's bias correction counts them), its fp32 master (empty: none) and
// AdamW's m and v (empty for SGD), each `count()` elements.
struct OptimizerState {
  int steps = 0;
  std::vector<float> master, m, v;
};  // 16-bit parameters only; fp32 ones are their own master

// The base: precision handling and the fp32 master, shared by AdamW and SGD.
class Optimizer {
 public:
  Optimizer(const ParamSlice& initial, Device device, MemoryTracker& mem, MasterWeights master);
  virtual ~Optimizer() = default;
  // One step of the slice's gradients, times inv_scale (undoing a loss scale). Returns false,
  // and changes nothing, when a 16-bit gradient is inf or NaN (an f16 loss scale overflowed).
  virtual bool step(const ParamSlice& s, float inv_scale = 1.0f);
  // The fp32 weights this optimizer updates: the master copy, or the fp32 parameters.
  // Null for 16-bit parameters without a master.
  const float* master() const { return master_.numel() ? master_.as<float>() : nullptr; }
  std::size_t count() const { return count_; }
  int steps_applied() const { return applied_; }
  virtual OptimizerState save_state() const;
  // Error unless `s` has this optimizer's buffers at its count (the same master or none).
  virtual void load_state(const OptimizerState& s);

 protected:
  // The fp32 update of elements [offset, offset + n) of the slice at step t (1-based).
  virtual void update(float* w, const float* g, std::size_t offset, std::size_t n, int t) = 0;
  void check_slice(const ParamSlice& s) const;
  bool gradients_finite(const ParamSlice& s);
  void ensure_workspace();  // on the first 16-bit step that needs it
  TrainOps& ops_;
  MemoryTracker& mem_;
  DType dtype_;
  std::size_t count_;
  int applied_ = 0;
  Tensor master_;           // 16-bit parameters with MasterWeights::keep
  Tensor work_w_, work_g_;  // one chunk of widened weights and gradients (16-bit only)
};

// Bytes of AdamW's state for n parameters (tags optimizer and master): m and v, and the fp32 master of
// 16-bit parameters kept with MasterWeights::keep (fp32: 8n; mixed: 12n, or 8n without).
double adamw_state_bytes(std::size_t n, DType precision, MasterWeights master = MasterWeights::keep);

class AdamW final : public Optimizer {
 public:
  AdamW(const ParamSlice& initial, Device device, MemoryTracker& mem, const kernels::AdamWConfig& config,
        MasterWeights master = MasterWeights::keep);
  bool step(const ParamSlice& s, float inv_scale = 1.0f) override;
  OptimizerState save_state() const override;
  void load_state(const OptimizerState& s) override;

 private:
  void update(float* w, const float* g, std::size_t offset, std::size_t n, int t) override;
  kernels::AdamWConfig config_;
  Tensor m_, v_;
};

class Sgd final : public Optimizer {
 public:
  Sgd(const ParamSlice& initial, Device device, MemoryTracker& mem, float lr,
      MasterWeights master = MasterWeights::keep);

 private:
  void update(float* w, const float* g, std::size_t offset, std::size_t n, int t) override;
  float lr_;
};

// Loss scaling for f16 (PyTorch's GradScaler: start 2^16, halve and skip the step on
// overflow, double after 2000 good steps); a scale of 1 that never changes otherwise.
class LossScaler {
 public:
  explicit LossScaler(DType precision);
  float scale() const { return scale_; }
  void update(bool step_applied);
  int skipped_steps() const { return skipped_; }

 private:
  bool dynamic_;
  float scale_;
  int good_since_growth_ = 0, skipped_ = 0;
};

}  // namespace dtl
