// The reference solutions of the context-parallel exercises, in namespace dtl::ref: each has
// the type (and so the contract) of its namesake in labs/context_parallel/exercises.h. The
// exercise track runs them where the learner has not written an exercise yet
// (exercises/unwritten.h); they are compiled from labs/context_parallel/solutions.cpp.
#pragma once

#include "labs/context_parallel/exercises.h"

namespace dtl::ref {

decltype(ex::online_softmax_merge) online_softmax_merge;
decltype(ex::zigzag_partition) zigzag_partition;
decltype(ex::ring_step) ring_step;

}  // namespace dtl::ref
