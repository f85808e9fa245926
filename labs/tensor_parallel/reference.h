// The reference solutions of the tensor-parallel exercises, in namespace dtl::ref: each has the
// type (and so the contract) of its namesake in labs/tensor_parallel/exercises.h. The exercise track
// runs them where the learner has not written an exercise yet (exercises/unwritten.h); they
// are compiled from labs/tensor_parallel/solutions.cpp (exercises/reference_copy.cmake). A learner
// never needs to read them.
#pragma once

#include "labs/tensor_parallel/exercises.h"

namespace dtl::ref {

using namespace dtl::ex;  // the exercise API's types (BufferView, GradBucket, ...)

decltype(ex::column_parallel_slice) column_parallel_slice;
decltype(ex::row_parallel_slice) row_parallel_slice;
decltype(ex::f_forward) f_forward;
decltype(ex::f_backward) f_backward;
decltype(ex::g_forward) g_forward;
decltype(ex::g_backward) g_backward;
decltype(ex::column_parallel_forward) column_parallel_forward;
decltype(ex::column_parallel_backward) column_parallel_backward;
decltype(ex::row_parallel_forward) row_parallel_forward;
decltype(ex::row_parallel_backward) row_parallel_backward;
decltype(ex::vocab_parallel_cross_entropy) vocab_parallel_cross_entropy;

}  // namespace dtl::ref
