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

#include "core/trace/trace.h"
#include "exercises/tensor_parallel.h"
#include "labs/train/checkpoint_tensors.h"
#include "labs/train/train_ops.h"

namespace dtl {

// What a block is. residual_blocks: Megatron's, as above. layer_stack: the ddp, zero and pipeline
// labs' MLP (labs/train/mlp.h: Linear → GELU layers, no residual) with in = width = out = h, read
// two layers at a time: layer 2l as block l's c_fc [h × h] (column-parallel), layer 2l+1 as its
// c_proj [h × h] (row-parallel) and then its GELU, except after the model's last layer. The same
// function as that Mlp of 2L layers, so a grid continues those labs' checkpoints.
enum class TpMlpForm { residual_blocks, layer_stack };

struct TpMlpShape {
  int hidden = 64, layers = 2;
  int rows = 32;  // tokens per step (the most per call): batch × sequence
  TpMlpForm form = TpMlpForm::residual_blocks;
  int ff() const { return form == TpMlpForm::layer_stack ? hidden : 4 * hidden; }  // c_fc's outputs
  // A GELU after block l's c_proj (layer_stack, all but the last block).
  bool gelu_after(int block) const { return form == TpMlpForm::layer_stack && block + 1 < layers; }
};

// Blocks first..last of the model (inclusive; last = -1: through the last): a pipeline
// stage holds a span.
struct BlockSpan {
  int first = 0, last = -1;
};

// What one forward keeps for its backward (one per micro-batch in flight), tagged
// activation: per held block the residual input (this rank's rows), z = c_fc(x) and
// GELU(z) (all rows, 4h/T wide); and the output.
struct TpMlpActivations {
  int rows = 0;
  std::vector<Tensor> x, z, a;
  std::vector<Tensor> p;  // layer_stack: c_proj's output before its GELU (this rank's rows; empty: none)
  Tensor out;
};

// The MLP's regression task, the same for every T and every grid: `elements` inputs
// x ~ N(0, 1) and targets 0.5·sin(3x) elementwise (a smooth function every block can help
// fit), drawn for training step `step` from a fixed seed, the same on every rank.
void mlp_task_batch(int step, std::size_t elements, std::vector<float>& x, std::vector<float>& y);
// Its order, for checkpoints: `rows` rows a step, step k's drawn from seed kMlpTaskSeed + k.
inline constexpr std::uint32_t kMlpTaskSeed = 1000;
DataOrder mlp_task_order(int batch, int seq);
// --resume's rules for this MLP: the tensor_parallel and grid labs read each other's checkpoints.
ResumeRules tp_mlp_resume_rules(int batch, int seq, int train_steps);

// The full model's tensor names of blocks first..last, in order: "h.{l}.mlp.c_fc.weight", ...
std::vector<std::string> tp_mlp_names(int first, int last);

// Binds the exercises' local arithmetic to a device's TrainOps.
ex::LinearMath linear_math(TrainOps& ops);

class TpMlp {
 public:
  TpMlp(const TpMlpShape& shape, const ex::TpGroup& tp, MemoryTracker& mem, std::uint32_t seed, TrainOps& ops,
        BlockSpan span = {});

  // Forward, loss, backward (gradients overwritten); x and target are this rank's rows of
  // the full [rows × h] input and target (all rows, or its slice under sequence
  // parallelism). Returns the loss of the whole batch (the same on every rank).
  float forward_backward(const float* x, const float* target);
  void adamw_step(const kernels::AdamWConfig& c, int step);

  // The pieces, for a pipeline stage: activations for `rows` rows (≤ shape.rows); forward
  // of the held blocks from this rank's rows of x (kept until backward), returning the
  // output's; backward from dL/d(output), adding to the gradients when `accumulate`,
  // returning dL/dx of the first held block's input (this rank's rows).
  TpMlpActivations make_activations(int rows);
  const float* forward(const float* x, TpMlpActivations& acts);
  const float* backward(const float* dy, TpMlpActivations& acts, bool accumulate);
  float* params() { return params_.as<float>(); }
  float* grads() { return grads_.as<float>(); }
  int first_block() const { return first_; }
  int last_block() const { return last_; }

  // The full model's tensors (a collective over the group): "h.{i}.mlp.c_fc.weight", ...,
  // in the order of names(); for the equivalence checks.
  std::vector<std::string> names() const;
  std::vector<float> full_params(const std::string& name);
  std::vector<float> full_grads(const std::string& name);
  std::size_t local_params() const { return params_.numel(); }

  // Its blocks of the full model's tensors for a sharded checkpoint (labs/train/checkpoint_tensors.h,
  // tp_mlp_checkpoint.cpp): c_fc's rows and c_proj's columns as tp_slices gives them; c_proj's
  // bias, equal on every rank of the group, saved by rank 0. The parameters and AdamW's m and v
  // copied to the host (zeros before the first step), and back; `with_optimizer` false: the
  // moments are another's (the grid's ZeRO-1 shards), zeros here and not set.
  std::vector<HeldTensor> held_tensors() const;
  HeldState host_state(bool with_optimizer = true);
  void set_state(const HeldState& st, bool with_optimizer = true);
  int local_rows() const { return local_rows(shape_.rows); }  // rows of the residual stream on this rank
  int local_rows(int rows) const;

 private:
  struct Block {
    std::size_t fc_w, fc_b, proj_w, proj_b;  // offsets into the flat buffers
  };
  ex::TpLinear fc(int slot, bool with_grads);
  ex::TpLinear proj(int slot);
  std::vector<float> gather(const std::string& name, const float* flat);
  void init_params(std::uint32_t seed);
  void make_optimizer_state();  // AdamW's m and v, zeros, once
  ScopedSpan block_span(std::uint16_t label);

  TpMlpShape shape_;
  ex::TpGroup tp_;
  TrainOps& ops_;
  ex::LinearMath math_;
  // One rank (T = 1, the lab's one-rank reference): plain layers through math_, none of the
  // learner's tensor-parallel functions, so the reference a run is checked against never
  // shares the learner's mistakes (issue 50).
  bool plain() const { return T_ == 1; }
  int T_ = 1, r_ = 0, ff_local_ = 0, first_ = 0, last_ = 0;
  bool proj_adds_bias_ = true;  // this rank's row_parallel_slice holds c_proj's bias (exercise tp_slices)
  MemoryTracker& mem_;
  std::vector<Block> blocks_;                           // the held blocks, by slot (block first_ + slot)
  std::vector<std::uint16_t> fwd_labels_, bwd_labels_;  // per slot
  Tensor params_, grads_, adam_m_, adam_v_;             // AdamW's moments made on its first step
  TpMlpActivations own_;                                // forward_backward's
  float* x_full() { return x_full_.numel() ? x_full_.as<float>() : nullptr; }
  Tensor x_full_, partial_, dy_full_, dz_, da_, dx_full_, dres_, dnext_;
  Tensor dpre_;  // layer_stack: dL/d(c_proj's output) before its GELU
};

}  // namespace dtl
