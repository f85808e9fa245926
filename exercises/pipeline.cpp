// Exercises: the pieces of a pipeline-parallel runtime (exercises/pipeline.h).
//
// Implement them, then run the lab on your code and grade it:
//   cmake --build --preset student -j2
//   build/release/student/dtlab run pipeline --schedule 1f1b --ranks 4 --micro-batches 8
//   build/release/student/dtlab grade --exercise one_f_one_b          # --hint 1, 2 or 3 when stuck
#include "exercises/pipeline.h"

#include "exercises/reference/pipeline.h"  // generated (exercises/track/reference_copy.cmake)
#include "exercises/track/unwritten.h"

namespace dtl::ex {

std::vector<pipeline::Action> one_f_one_b(int stages, int micro_batches, int stage) {
  return reference_until_written("one_f_one_b", ref::one_f_one_b, stages, micro_batches, stage);
}

std::vector<pipeline::Action> split_backward(const std::vector<pipeline::Action>& actions, int lag) {
  return reference_until_written("split_backward", ref::split_backward, actions, lag);
}

int vee_stage(int stages, int stage, int chunk) {
  return reference_until_written("vee_stage", ref::vee_stage, stages, stage, chunk);
}

std::vector<pipeline::Action> dualpipe_pairs(int stages, int micro_batches, int stage) {
  return reference_until_written("dualpipe_pairs", ref::dualpipe_pairs, stages, micro_batches, stage);
}

void run_stage(const std::vector<pipeline::Action>& actions, const StageOps& ops, std::vector<Request>& sends) {
  return reference_until_written("run_stage", ref::run_stage, actions, ops, sends);
}

}  // namespace dtl::ex
