// One rank training the model under one ZeRO stage: which buffers it holds, what it does
// at each layer hook, and its optimizer step. The stages differ only here:
//
//            parameters            gradients                      optimizer (master, m, v)
//   stage 0  whole (the model's)   whole; bucketed all-reduce     whole
//   stage 1  whole, padded         whole, padded; each unit       its shard; then the units'
//                                  reduce-scattered in place      parameters all-gathered
//   stage 2  whole, padded         its shard only; each unit's    its shard; all-gather
//                                  bucket reduce-scattered, freed
//   stage 3  its shard only;       as stage 2                     its shard; no all-gather
//            a unit all-gathered before its forward and again before its backward, freed after
//
// Collectives run on the rank's comm stream while the rank computes: stage 0's buckets and
// stages 1–3's reduce-scatters overlap the rest of backward, stage 3's prefetched gathers
// the layers before them.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "core/memory/buffer_pool.h"
#include "exercises/ddp.h"
#include "labs/train/buckets.h"
#include "labs/train/checkpoint_run.h"
#include "labs/train/data.h"
#include "labs/train/device_batch.h"
#include "labs/train/step_clock.h"
#include "labs/zero/zero_lab.h"
#include "labs/zero/zero_units.h"

namespace dtl {

class ZeroRank {
 public:
  ZeroRank(Comm& comm, const LabConfig& cfg, const ZeroSettings& s, ZeroStage stage, int prefetch_depth);
  // One step on rows [first_row, first_row + rows) of data. Returns the rows' mean loss.
  float train_step(const Dataset& data, int first_row, int rows, int step, ZeroStepTiming& t);
  // Collective: the whole model's fp32 weights (mixed precision: the master) on rank 0,
  // and this step's averaged gradients (loss scale divided out), assembled from the shards.
  std::vector<float> full_weights();
  std::vector<float> full_gradients();
  // What this rank's buffers hold by design: params + grads + master + m + v, in bytes.
  double exact_model_state() const;
  const ZeroUnits& units() const { return units_; }
  std::size_t pool_reserved() const { return pool_.reserved_bytes(); }
  const MemoryTracker& memory() const { return mem_; }
  std::size_t bucket_count() const { return ddp_ ? ddp_->bucket_count() : 0; }  // stage 0: DDP's all-reduce buckets
  Device device() const { return model_.device(); }
  int skipped_steps() const { return scaler_.skipped_steps(); }
  std::size_t memory_mark() const;  // where this stage's memory events begin in the trace
  // Checkpoints (labs/zero/zero_checkpoint.cpp): the global tensors "params" (the run's
  // precision), "master" (mixed precision with a master), "adam.m" and "adam.v" over the model's
  // flat buffer. Each rank writes the elements its optimizers own (stage 0: its 1/N of the
  // replicated whole) — a collective; and reads back, from a checkpoint of any stage and world
  // size, the byte ranges it holds. Returns the staged pieces / the bytes this rank read.
  StagedPieces stage_checkpoint();
  std::size_t load_checkpoint(const Manifest& m);

 private:
  void* at(void* base, std::size_t i) const;
  void* unit_params(const ZeroUnit& u);       // stages 1, 2: the padded unit; 3: the rank's chunk
  void* unit_shard_grads(const ZeroUnit& u);  // the rank's chunk of averaged gradients
  LayerHooks forward_hooks();
  LayerHooks backward_hooks();
  void gather_for(const std::vector<int>& order, int position);  // stage 3
  void release_gather(const ZeroUnit& u);
  void open_bucket(const ZeroUnit& u);  // stages 2, 3
  void reduce_unit(const ZeroUnit& u);  // stages 1–3
  // The elements of the model's flat buffer this rank's optimizers update, each with its
  // optimizer, the optimizer's first element there and where the parameters live.
  struct Owned {
    Range range;
    Optimizer* opt = nullptr;
    std::size_t opt_offset = 0;
    void* params = nullptr;
  };
  std::vector<Owned> owned();
  double wait(Request& r);  // waits, counted as exposed on the step's clock; returns the seconds
  void wait_reductions(std::size_t keep);
  bool gradients_finite_everywhere();
  void optimizer_step();
  void all_gather_params();  // stages 1, 2: the updated shards to every rank

  Comm& comm_;
  const LabConfig& cfg_;
  ZeroSettings s_;
  ZeroStage stage_;
  int depth_;
  std::size_t mark_;
  MemoryTracker mem_;
  BufferPool pool_;
  Mlp model_;
  ZeroUnits units_;
  // The watchdog names this rank's waits in the lab's words while the rank lives; it is made,
  // used and destroyed on its rank's thread (the words are thread-local).
  ScopedWaitWords wait_words_;
  std::size_t es_;
  Tensor full_params_, shard_params_, full_grads_, shard_grads_;
  std::vector<std::unique_ptr<AdamW>> opts_;  // stage 0: one; else one per unit this rank owns elements of
  LossScaler scaler_;
  std::optional<BucketedAllReduce> ddp_;  // stage 0: DDP's bucketed all-reduce, the DDP lab's own
  // In flight during a step.
  std::vector<PooledBuffer> gathered_;
  std::vector<Request> gathering_;
  std::vector<bool> issued_;
  struct Reduction {
    Request request;
    PooledBuffer bucket;  // stages 2, 3: freed once reduced
  };
  std::deque<Reduction> reducing_;
  std::vector<PooledBuffer> open_buckets_;
  StepClock* clock_ = nullptr;  // the step's, during train_step
  double waited_gather_ = 0;
  DeviceBatch batch_;  // this rank's rows on its device
};

}  // namespace dtl
