// One rank of the grid lab: pipeline stage coord.pp of the model's blocks (grid_stage.h:
// the MLP's or the GPT's), split over its tensor-parallel group, one of the data-parallel
// replicas. A step runs the schedule's F
// and B actions through the learner's stage loop (exercises/pipeline.h), then syncs the
// gradients over the dp group (all-reduce, or ZeRO-1's reduce-scatter, shard step and
// all-gather) and steps AdamW.
#pragma once

#include <memory>
#include <vector>

#include "labs/grid/grid_lab.h"
#include "labs/grid/grid_stage.h"

namespace dtl {

class GridRank {
 public:
  // The rank's tensors live on `device` (rank_device: the host, or its GPU).
  GridRank(Topology& topo, const GridSettings& s, MemoryTracker& mem, Device device);

  // One training step on the global batch of step `step`; returns its loss (every rank).
  float step(int step);
  // Busy seconds of this rank's F and B actions in the last step, and its first action's
  // start and last action's end (trace clock, seconds).
  double busy() const { return busy_; }
  double begin() const { return begin_; }
  double end() const { return end_; }

  GridStage& model() { return *model_; }
  const StageBlocks& blocks() const { return blocks_; }
  std::size_t local_params() const { return model_->local_params(); }
  std::size_t zero_chunk() const { return chunk_; }  // ZeRO-1: elements of this rank's shard

  // Its part of a sharded checkpoint (grid_checkpoint.cpp): its stage's blocks of its tp slice,
  // saved by the replica of dp rank 0 (ZeRO-1's moment shards gathered to it first; a
  // collective over the dp group), and read back on any grid.
  StagedPieces stage_checkpoint();
  std::size_t load_checkpoint(const Manifest& m);

 private:
  void forward(int m);
  void record_action(Pass pass, int m, double t0);
  void backward(int m);
  void sync_and_step(int t);
  void zero1_step(int t);
  double now() const;
  void gather_moments(Tensor& shard, std::vector<float>& whole);
  void pace(double t0, int units) const;

  Topology& topo_;
  GridSettings s_;
  MemoryTracker& mem_;
  Device device_;
  StageBlocks blocks_;
  std::unique_ptr<GridStage> model_;
  pipeline::Schedule schedule_;
  // Per micro-batch of the step: the inputs received, the outputs and input gradients
  // sent (kept until their sends are done), the gradients received (on the last stage:
  // the MLP's dL/dy from its loss).
  std::vector<Tensor> input_, output_, grad_in_, grad_out_;
  double loss_ = 0, busy_ = 0, begin_ = 0, end_ = 0;  // begin_, end_: this step's first action's start, last one's end
  int step_ = 0;                                      // the training step being run (the actions' spans carry it)
  // ZeRO-1: the padded gradients and parameters (D·chunk), this rank's gradient shard and
  // its AdamW moments.
  std::size_t chunk_ = 0;
  Tensor padded_, shard_grads_, adam_m_, adam_v_;
};

}  // namespace dtl
