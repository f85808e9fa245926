// Exercises: the pieces of a pipeline-parallel runtime (labs/pipeline/exercises.h).
//
// Implement them, then run the lab on your code and grade it:
//   cmake --preset student && cmake --build --preset student -j2
//   build/student/labs/cli/dtlab run pipeline --schedule 1f1b --ranks 4 --micro-batches 8
//   build/student/labs/cli/dtlab grade --exercise one_f_one_b          # --hint 1, 2 or 3 when stuck
#include "core/error.h"
#include "labs/pipeline/exercises.h"

namespace dtl::ex {

std::vector<pipeline::Action> one_f_one_b(int, int, int) {
  throw NotImplemented("one_f_one_b");
}

void run_stage(const std::vector<pipeline::Action>&, const StageOps&, std::vector<Request>&) {
  throw NotImplemented("run_stage");
}

}  // namespace dtl::ex
