// The reference solutions of the pipeline exercises: the same functions and contracts as
// labs/pipeline/exercises.h, in namespace dtl::ref. The exercise track runs them where the
// learner has not written an exercise yet (exercises/unwritten.h); they are compiled from
// labs/pipeline/solutions.cpp (exercises/CMakeLists.txt). A learner never needs to read them.
#pragma once

#include "labs/pipeline/exercises.h"

namespace dtl::ref {

using namespace dtl::ex;  // the exercise API's types (BufferView, GradBucket, ...)

std::vector<pipeline::Action> one_f_one_b(int stages, int micro_batches, int stage);
void run_stage(const std::vector<pipeline::Action>& actions, const StageOps& ops, std::vector<Request>& sends);

}  // namespace dtl::ref
