// The tensor-parallel MLP of the tensor-parallel lab: L residual blocks of Megatron's MLP,
//
//   x_{l+1} = x_l + c_proj(GELU(c_fc(x_l)))        c_fc [4h × h] column-parallel (f before it)
//                                                  c_proj [h × 4h] row-parallel (g after it)
//
// and a mean-squared-error loss against the teacher targets. Rank r of the T-rank group
// holds rows r·4h/T.. of c_fc and columns r·4h/T.. of c_proj (exercise tp_slices), so the
// 4h-wide hidden activation never exists whole on one rank; f and g (exercises f_operator,
// g_operator) are the only communication: one all-reduce forward (g) and one backward (f)
// per block. Under sequence parallelism the residual stream x holds rows/T rows per rank
// and f/g are all-gathers and reduce-scatters.
//
// The parameters are those of the full model with seed `seed`, whatever T: every rank
// draws the full tensors and keeps its slice, so T = 1 is the reference every T must equal.
#pragma once

#include <cstdint>
#include <vector>

#include "exercises/tensor_parallel.h"
#include "labs/train/train_ops.h"

namespace dtl {

struct TpMlpShape {
  int hidden = 64, layers = 2;
  int rows = 32;  // tokens per step: batch × sequence
};

// Binds the exercises' local arithmetic to a device's TrainOps.
ex::LinearMath linear_math(TrainOps& ops);

class TpMlp {
 public:
  TpMlp(const TpMlpShape& shape, const ex::TpGroup& tp, MemoryTracker& mem, std::uint32_t seed, TrainOps& ops);

  // Forward, loss, backward (gradients overwritten); x and target are this rank's rows of
  // the full [rows × h] input and target (all rows, or its slice under sequence
  // parallelism). Returns the loss of the whole batch (the same on every rank).
  float forward_backward(const float* x, const float* target);
  void adamw_step(const kernels::AdamWConfig& c, int step);

  // The full model's tensors (a collective over the group): "h.{i}.mlp.c_fc.weight", ...,
  // in the order of names(); for the equivalence checks.
  std::vector<std::string> names() const;
  std::vector<float> full_params(const std::string& name);
  std::vector<float> full_grads(const std::string& name);
  std::size_t local_params() const { return params_.numel(); }
  int local_rows() const;  // rows of the residual stream on this rank

 private:
  struct Block {
    std::size_t fc_w, fc_b, proj_w, proj_b;  // offsets into the flat buffers
  };
  ex::TpLinear fc(int l, bool with_grads);
  ex::TpLinear proj(int l);
  std::vector<float> gather(const std::string& name, const float* flat);
  void init_params(std::uint32_t seed);

  TpMlpShape shape_;
  ex::TpGroup tp_;
  TrainOps& ops_;
  ex::LinearMath math_;
  int T_ = 1, r_ = 0, ff_local_ = 0;
  std::vector<Block> blocks_;
  Tensor params_, grads_, adam_m_, adam_v_;
  // Kept for backward, per block: the residual input (this rank's rows), z = c_fc(x) and
  // GELU(z) (all rows, 4h/T wide).
  std::vector<Tensor> x_, z_, a_;
  float* x_full() { return x_full_.numel() ? x_full_.as<float>() : nullptr; }
  Tensor x_full_, out_, partial_, dy_full_, dz_, da_, dx_full_, dres_, dnext_;
};

}  // namespace dtl
