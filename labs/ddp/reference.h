// The reference solutions of the DDP exercises, in namespace dtl::ref: each has the
// type (and so the contract) of its namesake in labs/ddp/exercises.h. The exercise track
// runs them where the learner has not written an exercise yet (exercises/unwritten.h); they
// are compiled from labs/ddp/solutions.cpp (exercises/reference_copy.cmake). A learner
// never needs to read them.
#pragma once

#include "labs/ddp/exercises.h"

namespace dtl::ref {

using namespace dtl::ex;  // the exercise API's types (BufferView, GradBucket, ...)

decltype(ex::assign_buckets) assign_buckets;
decltype(ex::launch_ready_buckets) launch_ready_buckets;
decltype(ex::wait_for_buckets) wait_for_buckets;
decltype(ex::average_gradients) average_gradients;
decltype(ex::sync_this_micro_batch) sync_this_micro_batch;

}  // namespace dtl::ref
