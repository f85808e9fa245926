// DDP's gradient buckets over a model's layers (PyTorch DDP's bucket_cap_mb): whole layers
// in reverse order, a bucket closed at the capacity — the rule of the learner's exercise
// assign_buckets (exercises/ddp.h), applied to a parameter layout. The DDP lab and ZeRO's
// stage 0 (which is DDP) both build theirs here.
#pragma once

#include <vector>

#include "core/comm/dtype.h"
#include "exercises/ddp.h"
#include "labs/train/param_layout.h"

namespace dtl {

std::vector<ex::GradBucket> layer_buckets(const ParamLayout& layout, double capacity_mb, DType t);

}  // namespace dtl
