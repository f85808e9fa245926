// The reference solutions of the pipeline exercises, in namespace dtl::ref: each has the
// type (and so the contract) of its namesake in labs/pipeline/exercises.h. The exercise track
// runs them where the learner has not written an exercise yet (exercises/unwritten.h); they
// are compiled from labs/pipeline/solutions.cpp (exercises/reference_copy.cmake). A learner
// never needs to read them.
#pragma once

#include "labs/pipeline/exercises.h"

namespace dtl::ref {

using namespace dtl::ex;  // the exercise API's types (BufferView, GradBucket, ...)

decltype(ex::one_f_one_b) one_f_one_b;
decltype(ex::run_stage) run_stage;

}  // namespace dtl::ref
