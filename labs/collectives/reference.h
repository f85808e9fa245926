// The reference solutions of the collectives exercises, in namespace dtl::ref: each has the
// type (and so the contract) of its namesake in labs/collectives/exercises.h. The exercise track
// runs them where the learner has not written an exercise yet (exercises/unwritten.h); they
// are compiled from labs/collectives/solutions.cpp (exercises/reference_copy.cmake). A learner
// never needs to read them.
#pragma once

#include "labs/collectives/exercises.h"

namespace dtl::ref {

using namespace dtl::ex;  // the exercise API's types (BufferView, GradBucket, ...)

decltype(ex::naive_all_reduce) naive_all_reduce;
decltype(ex::ring_reduce_scatter) ring_reduce_scatter;
decltype(ex::ring_all_gather) ring_all_gather;
decltype(ex::ring_all_reduce) ring_all_reduce;
decltype(ex::all_reduce_by_reduce_scatter_all_gather) all_reduce_by_reduce_scatter_all_gather;
decltype(ex::tree_reduce) tree_reduce;
decltype(ex::tree_broadcast) tree_broadcast;
decltype(ex::tree_all_reduce) tree_all_reduce;
decltype(ex::rhd_all_reduce) rhd_all_reduce;
decltype(ex::all_reduce_cost) all_reduce_cost;

}  // namespace dtl::ref
