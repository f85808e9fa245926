// The reference solutions of the ZeRO exercises, in namespace dtl::ref: each has the
// type (and so the contract) of its namesake in labs/zero/exercises.h. The exercise track
// runs them where the learner has not written an exercise yet (exercises/unwritten.h); they
// are compiled from labs/zero/solutions.cpp (exercises/reference_copy.cmake). A learner
// never needs to read them.
#pragma once

#include "labs/zero/exercises.h"

namespace dtl::ref {

using namespace dtl::ex;  // the exercise API's types (BufferView, GradBucket, ...)

decltype(ex::shard_range) shard_range;
decltype(ex::reduce_scatter_gradients) reduce_scatter_gradients;
decltype(ex::shard_step) shard_step;
decltype(ex::all_gather_params) all_gather_params;
decltype(ex::units_to_gather) units_to_gather;

}  // namespace dtl::ref
