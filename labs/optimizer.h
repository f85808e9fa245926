// The optimizer of the training labs: AdamW on an Mlp, in fp32 or mixed precision.
//
//   fp32   weights 4 + grads 4 (the model's) + m 4 + v 4            = 16 bytes/parameter
//   mixed  weights 2 + grads 2 (bf16/f16)  + master 4 + m 4 + v 4   = 16 bytes/parameter
//
// Mixed precision keeps an fp32 master copy because a 16-bit weight cannot take a small
// update (bf16 has 8 significant bits: w + 1e-4·w rounds back to w). With f16 the loss is
// multiplied by a scale so small gradients do not flush to zero; a step whose gradients
// overflowed is skipped and the scale halved (PyTorch's GradScaler: start 2^16, back-off
// 0.5, growth 2 after 2000 good steps).
#pragma once

#include <vector>

#include "kernels/cpu/kernels.h"
#include "labs/model.h"

namespace dtl {

class AdamW {
 public:
  AdamW(Mlp& model, MemoryTracker& mem, const kernels::AdamWConfig& config);

  // What the loss (and so every gradient) is multiplied by before backward; 1 unless f16.
  float loss_scale() const { return scale_; }
  // One step from the model's gradients. Returns false if the step was skipped (overflow).
  bool step();
  // The fp32 weights the optimizer updates: the model's own in fp32, the master copy in
  // mixed precision. Equivalence checks compare these.
  const float* weights() const;
  int skipped_steps() const { return skipped_; }
  // The model's gradients as floats with the loss scale divided out: what this step will
  // apply, comparable across precisions and world sizes.
  std::vector<float> unscaled_gradients() const;

 private:
  Mlp& model_;
  kernels::AdamWConfig config_;
  Tensor master_, m_, v_;
  float scale_ = 1.0f;
  int applied_ = 0, skipped_ = 0, good_since_growth_ = 0;
};

}  // namespace dtl
