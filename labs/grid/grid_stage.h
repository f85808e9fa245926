// The model a grid rank holds: its pipeline stage's blocks of the MLP (grid_mlp_stage.cpp)
// or of the tiny GPT (grid_gpt_stage.cpp), split over its tp group. GridRank (grid_rank.h)
// runs the schedule, the sends between stages and the dp sync; a stage only runs one
// micro-batch forward or backward, and says what the formulas expect of it. Between
// stages both models pass [R × h] floats, R = the micro-batch's rows.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "labs/grid/grid_lab.h"
#include "labs/train/checkpoint_tensors.h"

namespace dtl {

class GridStage {
 public:
  virtual ~GridStage() = default;

  // A new step: draw its global batch (the same on every rank), forget the last step's.
  virtual void begin_step(int step) = 0;
  // Micro-batch m forward through the held blocks, from `x` (the previous stage's output;
  // ignored on the first stage). Returns the output, valid until the next call. On the
  // last stage: adds the micro-batch's share of the step's loss to `loss` and leaves
  // dL/d(output) where its backward reads it — `dy` ([R × h]) if the model needs it.
  virtual const float* forward(int m, const float* x, float* dy, double& loss) = 0;
  // Its backward from dy = dL/d(output), adding to the gradients; returns dL/dx of the
  // stage's input (nullptr on the first stage), valid until the next call.
  virtual const float* backward(int m, const float* dy) = 0;
  // After every backward of the step, before the dp sync (the GPT's tied embedding).
  virtual void after_backward() {}

  virtual float* params() = 0;
  virtual float* grads() = 0;
  virtual std::size_t local_params() const = 0;
  virtual void adamw_step(const kernels::AdamWConfig& c, int t) = 0;  // AdamW over all of local_params()

  // The held tensors (full_params: all-gathered over the tp group, a collective) and each
  // one's index in the whole model's list of tensors (train_one_rank's order).
  virtual std::vector<std::string> names() const = 0;
  virtual std::vector<std::size_t> whole_indices() const = 0;
  virtual std::vector<float> full_params(const std::string& name) = 0;

  // What the formulas say: the activation bytes one micro-batch in flight keeps, the
  // bytes the tp group's collectives send per micro-batch (ring: 2(T−1)/T of each
  // all-reduce), and per step the tied embedding's gradient all-reduce.
  virtual double activation_bytes() const = 0;
  // The most activation bytes held with `in_flight` micro-batches between forward and backward.
  virtual double activation_peak(int in_flight) const { return in_flight * activation_bytes(); }
  // Activation memory reserved and idle (a caching pool's), which the tracker does not count.
  virtual std::size_t activation_cache_bytes() const { return 0; }
  // The GPT's measured activations (a collective over `world`); false for the MLP.
  virtual bool activation_figures(Comm&, GptActivationFigures&) const { return false; }
  // The GPT's activation lines for the activations view (meta activation_formula.<rank>).
  virtual void publish_activation_formula(Comm&, int /*in_flight*/) const {}
  virtual double tp_bytes_per_micro_batch() const = 0;

  // A sharded checkpoint's part (labs/train/checkpoint_tensors.h): the blocks of the whole
  // model's tensors the stage holds, its state on the host and back (`with_optimizer` false:
  // AdamW's moments are the ZeRO-1 shards GridRank keeps).
  virtual std::vector<HeldTensor> held_tensors() const = 0;
  virtual HeldState host_state(bool with_optimizer) = 0;
  virtual void set_state(const HeldState& st, bool with_optimizer) = 0;
  virtual double embedding_bytes() const { return 0; }
};

// On `device`: the model, its optimizer state and the batch's rows copied there each step.
std::unique_ptr<GridStage> make_grid_mlp_stage(Topology& topo, const GridSettings& s, MemoryTracker& mem, StageBlocks b,
                                               Device device);
std::unique_ptr<GridStage> make_grid_gpt_stage(Topology& topo, const GridSettings& s, MemoryTracker& mem, StageBlocks b,
                                               Device device);

// The reference: one rank (a group of one) trains the whole model on the global batch for
// s.steps steps; its loss at each step and its final tensors in the whole model's order. The
// MLP's, with --resume, starts from the same checkpoint (read whole): its losses are then those
// of the steps after it (a checkpoint of another lab, as the zero lab's, starts elsewhere than
// the grid's own initialization).
struct OneRankRun {
  std::vector<float> losses;
  std::vector<std::vector<float>> weights;
};
OneRankRun train_mlp_one_rank(Comm& alone, const GridSettings& s, Device device);
OneRankRun train_gpt_one_rank(Comm& alone, const GridSettings& s, Device device);

}  // namespace dtl
