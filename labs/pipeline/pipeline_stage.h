// One rank of the pipeline lab: its stage's model chunks (v of them under interleaving and
// the V schedules, each its own Mlp over the layers of its virtual stage, placed as the
// schedule says: chunk·P + stage, or the V's stage and 2P − 1 − stage), the micro-batches in
// flight on it, and the point-to-point messages between neighbouring stages. The order of
// work is the schedule's; the loop that runs it is the learner's (exercises/pipeline.h).
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "exercises/pipeline.h"
#include "labs/pipeline/pipeline_lab.h"
#include "labs/train/checkpoint_run.h"
#include "labs/train/data.h"
#include "labs/train/optimizer.h"

namespace dtl {

// What one step on this stage did: its actions' times (for busy time and the simulator),
// its compute span, and the loss (last stage).
struct StageStep {
  double begin = 0, end = 0;                     // seconds on the trace clock: the step's start, its last action's end
  double first = -1;                             // its first action's start (-1: none yet)
  double busy = 0;                               // Σ action times
  double forward = 0, backward = 0, weight = 0;  // Σ per op
  int forwards = 0, backwards = 0, weights = 0;
  float loss = 0;  // the global batch's loss (last stage; 0 elsewhere)
  int losses = 0;  // micro-batches whose loss this stage computed (the one holding the last layer)
  double sent_bytes = 0;
};

class PipelineStage {
 public:
  PipelineStage(Comm& comm, const LabConfig& cfg, const PipelineSettings& s, const pipeline::Schedule& schedule);
  StageStep train_step(const Dataset& data, int step);
  // Collective: the whole model's weights assembled on rank 0 (empty elsewhere).
  std::vector<float> weights_on_rank0();
  int in_flight_peak() const { return in_flight_peak_; }
  MemoryTracker& memory() { return mem_; }
  std::size_t local_params() const;  // this stage's parameters, every chunk's
  Device device() const { return device_; }
  // Checkpoints (labs/pipeline/pipeline_checkpoint.cpp): each chunk's layers are one range of the
  // whole model's flat buffer, so a stage saves and loads exactly its ranges, whatever layout
  // (pipeline, ZeRO or DDP, any rank count) saved them.
  StagedPieces stage_checkpoint();
  std::size_t load_checkpoint(const Manifest& m);

 private:
  struct Chunk {
    int virtual_stage = 0;
    LayerSpan span;
    std::unique_ptr<Mlp> model;
    std::unique_ptr<AdamW> opt;
    bool gradients_started = false;  // this step: the first B (zb: W) overwrites, the rest accumulate
  };
  struct InFlight {  // one micro-batch on one chunk, from its F to its B (zb: W)
    Tensor input;    // the activation received (none on the first virtual stage: the data)
    Activations acts;
    Tensor grad_in;                 // dL/d(output): received, or the loss's on the last virtual stage
    const float* output = nullptr;  // the forward's output, in acts
  };
  struct Sent {
    Request request;
    Tensor buffer;
  };
  ex::StageOps stage_ops(const Dataset& data, int step, StageStep& rec);
  void forward(const Dataset& data, int step, int m, int c, StageStep& rec);
  void backward(int m, int c, int step, StageStep& rec, bool split);
  void weight(int m, int c, int step, StageStep& rec);
  Request post_send(Tensor buffer, int m, int to_vs, int kind, int step, StageStep& rec);
  Request post_recv(Tensor& into, std::size_t floats, int m, int from_vs, int kind, int step);
  void record(Pass op, int m, int c, int step, double begin, double end, double& op_total, int& op_count,
              StageStep& rec);
  void pace(double begin, double target_us);  // --compute-us: the action lasts target_us
  int stage_of(int vs) const { return schedule_.stage_of(vs); }
  // A micro-batch's rows of the data set (inputs or targets), copied to the stage's device.
  // A micro-batch's rows of the data (MemTag::data) on the stage's device: a new tensor, or
  // `into` when given (reused: the last stage's targets, needed only for the loss).
  Tensor rows_on_device(const float* host_rows, int width);
  void rows_on_device(const float* host_rows, int width, Tensor& into);
  Range global_range(const Chunk& c) const;  // the chunk's elements in the whole model's flat buffer
  bool last_virtual(int vs) const { return vs == schedule_.virtual_stages() - 1; }

  Comm& comm_;
  const LabConfig& cfg_;
  PipelineSettings s_;
  const pipeline::Schedule& schedule_;
  int P_;
  Device device_;  // where the stage's chunks compute
  MemoryTracker mem_;
  std::vector<Chunk> chunks_;
  std::map<std::pair<int, int>, InFlight> in_flight_;
  std::vector<Sent> sent_;
  Tensor dx_;      // the last backward's dL/dx, until the loop sends it back
  Tensor target_;  // the last stage's targets of the micro-batch being forwarded
  int in_flight_peak_ = 0;
  float loss_sum_ = 0;
};

// The step to start from: 0, or --resume's, each stage reading its layers' ranges only
// (pipeline_checkpoint.cpp).
int resume_stage(Comm& comm, const PipelineSettings& s, PipelineStage& stage, CheckpointStats& stats);

}  // namespace dtl
