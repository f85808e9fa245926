// DDP's gradient buckets over a model's layers (PyTorch DDP's bucket_cap_mb): whole layers
// in reverse order, a bucket closed at the capacity — the rule of the learner's exercise
// assign_buckets (exercises/ddp.h), applied to a parameter layout — and the bucketed
// all-reduce that runs them. The DDP lab's bucketed variants and ZeRO's stage 0 (which is
// DDP) both run this one.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/comm/dtype.h"
#include "core/trace/vocab.h"
#include "exercises/ddp.h"
#include "labs/train/mlp.h"
#include "labs/train/param_layout.h"

namespace dtl {

std::vector<ex::GradBucket> layer_buckets(const ParamLayout& layout, double capacity_mb, DType t);

// The model's gradients averaged bucket by bucket (PyTorch DDP's Reducer): launch_hooks()
// starts each bucket's async all-reduce the moment the last of its layers' gradients is
// ready, during backward; wait() before the optimizer step. Built from the learner's DDP
// exercises (launch_ready_buckets, wait_for_buckets), so the lab runs the learner's code.
class BucketedAllReduce {
 public:
  BucketedAllReduce(Comm& comm, Mlp& model, double capacity_mb)
      : comm_(comm),
        grads_{model.grad_data(), model.precision()},
        buckets_(layer_buckets(model.layout(), capacity_mb, model.precision())) {}
  // An after_backward hook (leave it out on the micro-batches that skip synchronizing).
  LayerHooks launch_hooks() {
    LayerHooks h;
    h.after_backward = [this](int layer) {
      // The all-reduce the learner's code posts now is this layer's bucket's: its trace event
      // carries the bucket's index (Role::bucket) for the timeline.
      ScopedCollectiveRole says(Role{.bucket = bucket_completed_by(layer)});
      ex::launch_ready_buckets(comm_, grads_, buckets_, layer, pending_);
    };
    return h;
  }
  void wait() {
    ex::wait_for_buckets(pending_);  // every launched bucket averaged
    left_after_wait_ = std::max(left_after_wait_, pending_.size());
  }
  // The most requests the learner's wait_for_buckets left in `pending` (0: it cleared them,
  // as its contract says; the DDP lab checks it).
  std::size_t left_after_wait() const { return left_after_wait_; }
  std::size_t bucket_count() const { return buckets_.size(); }
  // The bucket whose gradients are all ready once `layer`'s backward ends: the one that starts
  // at it (backward runs from the last layer down), -1 when none does.
  std::int16_t bucket_completed_by(int layer) const {
    for (std::size_t b = 0; b < buckets_.size(); ++b)
      if (buckets_[b].first_layer == layer) return std::int16_t(b);
    return -1;
  }

 private:
  Comm& comm_;
  ex::GradBuffer grads_;
  std::vector<ex::GradBucket> buckets_;
  std::vector<Request> pending_;
  std::size_t left_after_wait_ = 0;
};

}  // namespace dtl
