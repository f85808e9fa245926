// Exercises: the parts of DistributedDataParallel (labs/ddp/exercises.h).
//
// Implement them, then run the lab on your code and grade it:
//   cmake --preset student && cmake --build --preset student -j2
//   build/student/labs/cli/dtlab run ddp --variant all --ranks 4
//   build/student/labs/cli/dtlab grade --exercise assign_buckets          # --hint 1, 2 or 3 when stuck
// The visualizer's timeline shows your buckets' all-reduces on each rank's comm stream:
// with bucketing right they start during backward instead of after it.
#include "core/error.h"
#include "labs/ddp/exercises.h"

namespace dtl::ex {

std::vector<GradBucket> assign_buckets(const std::vector<std::size_t>&, std::size_t) {
  throw NotImplemented("assign_buckets");
}

void launch_ready_buckets(Comm&, const GradBuffer&, const std::vector<GradBucket>&, int, std::vector<Request>&) {
  throw NotImplemented("launch_ready_buckets");
}

void wait_for_buckets(std::vector<Request>&) {
  throw NotImplemented("wait_for_buckets");
}

void average_gradients(Comm&, const GradBuffer&, std::size_t) {
  throw NotImplemented("average_gradients");
}

bool sync_this_micro_batch(int, int) {
  throw NotImplemented("sync_this_micro_batch");
}

}  // namespace dtl::ex
